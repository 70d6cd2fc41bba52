// A fixed set of connections handed out one caller at a time: SQLite's read
// connections (ReadPool), the PostgreSQL store's (PgPool).
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

#include "engine/store/sqlite_db.hpp"

namespace reprise::engine {

template <class Db>
class ConnectionPool {
 public:
  explicit ConnectionPool(std::vector<std::unique_ptr<Db>> connections) : free_(std::move(connections)) {}

  // A borrowed connection, returned to the pool when the lease ends.
  class Lease {
   public:
    Lease(ConnectionPool& pool, std::unique_ptr<Db> db) : pool_(pool), db_(std::move(db)) {}
    ~Lease() { pool_.give_back(std::move(db_)); }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    Db& operator*() { return *db_; }
    Db* operator->() { return db_.get(); }

   private:
    ConnectionPool& pool_;
    std::unique_ptr<Db> db_;
  };

  Lease acquire() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [this] { return !free_.empty(); });
    std::unique_ptr<Db> db = std::move(free_.back());
    free_.pop_back();
    return Lease(*this, std::move(db));
  }

 private:
  void give_back(std::unique_ptr<Db> db) {
    {
      std::lock_guard lock(mu_);
      free_.push_back(std::move(db));
    }
    cv_.notify_one();
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<Db>> free_;
};

using ReadPool = ConnectionPool<SqliteDb>;

}  // namespace reprise::engine
