// What the store counts about its writes since it opened: the group
// commit's batches, the WAL checkpoints and the syncs they cost. Reported by
// the server's GetStorageStats (docs/engine.md, "Group commit and
// checkpoints").
#pragma once

#include <array>
#include <chrono>
#include <cstdint>

namespace reprise::engine {

// Batches by how many writes they committed: [0] 1, [1] 2-3, [2] 4-7, ...,
// [8] 256 and more.
inline constexpr int kBatchSizeBuckets = 9;
// Batches by how long their transaction took, BEGIN to COMMIT's return (the
// WAL's sync included): the upper bounds in seconds, and one more bucket above.
inline constexpr std::array<double, 12> kCommitSecondsBounds = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                                                0.05,   0.1,   0.25,   0.5,   1,    5};

// TransitionWriter's.
struct WriterStats {
  int64_t transitions = 0;  // acknowledged as committed
  int64_t batches = 0;      // SQLite transactions committed (one WAL sync each)
  int64_t jobs = 0;         // submit_job() writes committed
  int64_t largest_batch = 0;
  std::array<int64_t, kBatchSizeBuckets> batch_sizes{};
  std::array<int64_t, kCommitSecondsBounds.size() + 1> commit_times{};
  std::chrono::nanoseconds commit_time{0};  // all together
};

// WalCheckpointer's.
struct CheckpointStats {
  int64_t passive = 0;                      // passive checkpoints run in the background (or kCaller)
  int64_t restarts = 0;                     // restart checkpoints run (the WAL past its bound)
  int64_t by_writer = 0;                    // the rest copied by the writer between batches
  std::chrono::nanoseconds writer_time{0};  // the writer spent on those
  int64_t restarts_busy = 0;                // of which could not wait long enough for the readers
  int64_t failed = 0;                       // checkpoints that failed (an I/O error, a full disk)
  int64_t copied_pages = 0;                 // WAL pages copied into the database
  std::chrono::nanoseconds time{0};         // spent checkpointing, all together
  std::chrono::nanoseconds longest{0};      // the longest checkpoint
  int64_t wal_pages = 0;                    // in the WAL after the last commit
  int64_t largest_wal_pages = 0;            // the most it held after a commit
};

struct StorageStats {
  WriterStats writes;
  CheckpointStats checkpoints;
  // Syncs (fsync/fdatasync) of the WAL and of the database file, by every
  // connection of the store: a commit syncs the WAL once (twice when it
  // starts the WAL over); a checkpoint syncs the WAL and the database.
  int64_t wal_syncs = 0;
  int64_t database_syncs = 0;
  std::chrono::nanoseconds sync_time{0};  // the time all of those syncs took
};

}  // namespace reprise::engine
