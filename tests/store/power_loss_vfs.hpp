// A SQLite VFS that simulates a power loss: what SQLite writes goes to an
// in-memory image of the file, shared by every connection to that file as the
// kernel's page cache is, and reaches the real file only when SQLite syncs it.
// A power cut drops every image, so the files on disk then hold exactly what
// was synced, which is what a machine finds after losing power. (A SIGKILL
// proves nothing here: the kernel's page cache outlives the process, so even
// synchronous=OFF survives it.)
//
// Written by hand over the default unix VFS: SQLite's own crash-simulating
// VFS (test6.c) and test_demovfs.c are part of its test harness, which Debian
// does not ship. Main databases and WALs go through the images; temporary
// files and the WAL index (-shm, rebuilt from the WAL when the first
// connection opens after a cut) go straight to the unix VFS. Unsynced writes
// are all lost, never a part of them (a real disk may keep any part): enough
// to show a sync that is missing or comes after the acknowledgement.
//
// It also fails the disk without cutting the power: a full disk (every write
// fails with SQLITE_FULL until there is room again) and syncs that fail
// (SQLITE_IOERR_FSYNC; what they should have synced stays in the image, and
// a later sync may still put it on disk, as after a transient device error).
//
// Thread safety: every call is serialized on one mutex; SQLite may call it
// from any thread. Lifetime: registered once, for the life of the process.
#pragma once

#include <cstdint>

namespace reprise::engine::testing {

class PowerLossVfs {
 public:
  // The name to open a database with (StoreOptions::vfs).
  static constexpr const char* kName = "reprise-power-loss";

  // Registers the VFS on first use.
  static PowerLossVfs& instance();

  // The power fails at the `n`-th write, truncation or sync from now
  // (counting from 1): that call and every later one fails with an I/O
  // error, and nothing more reaches the disk.
  void cut_power_after(int64_t n);
  bool power_is_cut() const;
  // Forgets what the cut lost, and ends every disk fault: files opened from
  // now on read what is on disk. Every connection opened before must be
  // closed first.
  void restore_power();
  // Syncs that reached the disk since the VFS was registered.
  int64_t syncs() const;

  // While `full`, every write fails with SQLITE_FULL (truncations and
  // syncs go through: they need no room).
  void set_disk_full(bool full);
  bool disk_full() const;
  // The next `n` syncs fail with SQLITE_IOERR_FSYNC, writing nothing.
  void fail_next_syncs(int64_t n);
  int64_t failing_syncs_left() const;
  // Ends every fault not yet reached: a full disk, failing syncs and a cut
  // planned by cut_power_after() (a cut already made stays).
  void clear_planned_faults();

  PowerLossVfs(const PowerLossVfs&) = delete;
  PowerLossVfs& operator=(const PowerLossVfs&) = delete;

 private:
  PowerLossVfs();
};

}  // namespace reprise::engine::testing
