// SyncCountingVfs: a SQLite VFS that passes every call to another VFS and
// counts the syncs (fsync/fdatasync) of the database file and of its WAL, so
// the store can say how many a commit costs and how many checkpoints add.
//
// Each instance registers under a name of its own (name()), for the store
// that opens its connections with it; it counts the syncs of every file
// opened through it.
//
// Thread safety: the counters are atomic; SQLite may call the VFS from any
// thread. Lifetime: every connection opened with name() must be closed
// before the instance is destroyed (it unregisters then).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "history/status.hpp"

struct sqlite3_vfs;

namespace reprise::engine {

class SyncCountingVfs {
 public:
  // Over the registered VFS `base` ("" is SQLite's default).
  static Result<std::unique_ptr<SyncCountingVfs>> create(const std::string& base);
  ~SyncCountingVfs();
  SyncCountingVfs(const SyncCountingVfs&) = delete;
  SyncCountingVfs& operator=(const SyncCountingVfs&) = delete;

  const std::string& name() const { return name_; }
  int64_t database_syncs() const { return database_syncs_.load(std::memory_order_relaxed); }
  int64_t wal_syncs() const { return wal_syncs_.load(std::memory_order_relaxed); }
  // The time those syncs took, all together.
  std::chrono::nanoseconds sync_time() const {
    return std::chrono::nanoseconds(sync_nanos_.load(std::memory_order_relaxed));
  }

  // Used by the VFS's calls (sync_counting_vfs.cpp).
  sqlite3_vfs* base() const { return base_; }
  std::atomic<int64_t>& database_syncs_counter() { return database_syncs_; }
  std::atomic<int64_t>& wal_syncs_counter() { return wal_syncs_; }
  std::atomic<int64_t>& sync_nanos_counter() { return sync_nanos_; }

 private:
  SyncCountingVfs() = default;

  std::string name_;
  sqlite3_vfs* base_ = nullptr;
  std::unique_ptr<sqlite3_vfs> vfs_;
  std::atomic<int64_t> database_syncs_{0};
  std::atomic<int64_t> wal_syncs_{0};
  std::atomic<int64_t> sync_nanos_{0};
};

}  // namespace reprise::engine
