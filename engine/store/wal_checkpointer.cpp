#include "engine/store/wal_checkpointer.hpp"

#include <algorithm>
#include <utility>

#include "engine/thread_name.hpp"

namespace reprise::engine {

WalCheckpointer::WalCheckpointer(std::unique_ptr<SqliteDb> db, CheckpointOptions options)
    : db_(std::move(db)), options_(options) {
  if (options_.runner == CheckpointOptions::Runner::kOwnThread) {
    thread_ = std::thread([this] { run(); });
    name_thread(thread_, "checkpointer");
  }
}

WalCheckpointer::~WalCheckpointer() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void WalCheckpointer::wal_committed(int64_t wal_pages) {
  bool wake = false;
  {
    std::lock_guard lock(mu_);
    if (wal_pages < stats_.wal_pages) copied_through_ = next_due_at_ = next_restart_at_ = 0;  // started over
    stats_.wal_pages = wal_pages;
    stats_.largest_wal_pages = std::max(stats_.largest_wal_pages, wal_pages);
    wake = thread_.joinable() && due();
  }
  if (wake) cv_.notify_one();
}

bool WalCheckpointer::due() const {
  return stats_.wal_pages >= std::max(options_.passive_after_pages, next_due_at_) || restart_due();
}

bool WalCheckpointer::restart_due() const {
  return stats_.wal_pages >= std::max(options_.restart_after_pages, next_restart_at_);
}

void WalCheckpointer::between_batches(SqliteDb& writer_db, bool idle) {
  if (options_.runner == CheckpointOptions::Runner::kCaller) {
    bool run_now = false;
    {
      std::lock_guard lock(mu_);
      run_now = idle && due();
    }
    if (run_now) checkpoint();
    return;
  }
  if (!writer_to_finish_.exchange(false, std::memory_order_relaxed)) return;
  const auto began = std::chrono::steady_clock::now();
  Result<CheckpointOutcome> done = writer_db.checkpoint(CheckpointMode::kPassive);
  const auto took = std::chrono::steady_clock::now() - began;
  std::lock_guard lock(mu_);
  ++stats_.by_writer;
  stats_.writer_time += took;
  if (!done) {
    ++stats_.failed;
    return;
  }
  count(*done);
}

void WalCheckpointer::run() {
  while (true) {
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || due(); });
      if (stopping_) return;
    }
    checkpoint();
  }
}

void WalCheckpointer::checkpoint() {
  bool restart = false;
  {
    std::lock_guard lock(mu_);
    restart = restart_due();
  }
  const auto began = std::chrono::steady_clock::now();
  Result<CheckpointOutcome> done = db_->checkpoint(CheckpointMode::kPassive);
  // Readers kept it from copying it all, and the WAL is past its bound:
  // wait for them (holding the writer back) so that the WAL starts over.
  restart = restart && done && done->copied_pages < done->wal_pages;
  if (restart) {
    db_->set_busy_timeout(options_.restart_wait);
    done = db_->checkpoint(CheckpointMode::kRestart);
    db_->set_busy_timeout(SqliteDb::kBusyTimeout);
  }
  const auto took = std::chrono::steady_clock::now() - began;

  std::lock_guard lock(mu_);
  stats_.time += took;
  stats_.longest = std::max<std::chrono::nanoseconds>(stats_.longest, took);
  ++(restart ? stats_.restarts : stats_.passive);
  // Not again before the WAL has grown by another quarter: the writer
  // starts a WAL that was all copied over (and it is due once full again),
  // unless a reader is still in it at that moment.
  next_due_at_ = stats_.wal_pages + std::max<int64_t>(1, options_.passive_after_pages / 4);
  next_restart_at_ = std::max(next_restart_at_, stats_.wal_pages + 1);
  if (!done) {
    ++stats_.failed;
    return;
  }
  count(*done);
  if (restart && done->busy) {
    ++stats_.restarts_busy;
    next_restart_at_ = stats_.wal_pages + options_.passive_after_pages;
  }
  // The writer committed while this ran: it copies the rest between two
  // batches, so that its next transaction can start the WAL over.
  if (thread_.joinable() && stats_.wal_pages > done->copied_pages) {
    writer_to_finish_.store(true, std::memory_order_relaxed);
  }
}

void WalCheckpointer::count(const CheckpointOutcome& outcome) {
  // copied_pages counts from the WAL's beginning: what is new is past what
  // an earlier checkpoint of the same WAL copied.
  stats_.copied_pages += std::max<int64_t>(0, outcome.copied_pages - copied_through_);
  copied_through_ = std::max(copied_through_, outcome.copied_pages);
}

WalCheckpointer::Stats WalCheckpointer::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

}  // namespace reprise::engine
