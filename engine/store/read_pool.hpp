// A fixed set of read connections handed out one caller at a time.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

#include "engine/store/sqlite_db.hpp"

namespace reprise::engine {

class ReadPool {
 public:
  explicit ReadPool(std::vector<std::unique_ptr<SqliteDb>> connections) : free_(std::move(connections)) {}

  // A borrowed connection, returned to the pool when the lease ends.
  class Lease {
   public:
    Lease(ReadPool& pool, std::unique_ptr<SqliteDb> db) : pool_(pool), db_(std::move(db)) {}
    ~Lease() { pool_.give_back(std::move(db_)); }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    SqliteDb& operator*() { return *db_; }
    SqliteDb* operator->() { return db_.get(); }

   private:
    ReadPool& pool_;
    std::unique_ptr<SqliteDb> db_;
  };

  Lease acquire() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [this] { return !free_.empty(); });
    std::unique_ptr<SqliteDb> db = std::move(free_.back());
    free_.pop_back();
    return Lease(*this, std::move(db));
  }

 private:
  void give_back(std::unique_ptr<SqliteDb> db) {
    {
      std::lock_guard lock(mu_);
      free_.push_back(std::move(db));
    }
    cv_.notify_one();
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<SqliteDb>> free_;
};

}  // namespace reprise::engine
