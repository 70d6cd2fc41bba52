// One store per database file: an exclusive flock(2) on `PATH-lock` beside
// the file, held by the SqliteStore that opened PATH until it is destroyed.
//
// Two servers on one file would each hand out the same tasks and fire the
// same timers from their own in-memory queues; the store's conditional writes
// catch only some of what follows. SQLite's own locks (fcntl byte ranges)
// serialize writes, not owners, and the online backup and `reprise admin
// check` must still read a file a server holds, so only stores take this
// lock. It is on a file of its own because closing any descriptor of the
// database file would drop SQLite's fcntl locks on it in this process. The
// kernel drops the flock when the process dies, so a kill -9 leaves nothing
// to clean up (the empty lock file stays, harmless).
//
// Thread rule: acquire() from any thread; the lock is released by the
// destructor. Not for network file systems (where flock is emulated with
// fcntl locks and SQLite's locks are not to be trusted anyway).
#pragma once

#include <string>

#include "history/status.hpp"

namespace reprise::engine {

class DatabaseLock {
 public:
  // Creates `path`-lock if missing. FAILED_PRECONDITION naming the database
  // when another open store holds it (in this process or another);
  // PERMISSION_DENIED when the lock file is missing and cannot be created.
  static Result<DatabaseLock> acquire(const std::string& path);

  DatabaseLock() = default;  // holds nothing
  DatabaseLock(DatabaseLock&& other) noexcept;
  DatabaseLock& operator=(DatabaseLock&& other) noexcept;
  DatabaseLock(const DatabaseLock&) = delete;
  DatabaseLock& operator=(const DatabaseLock&) = delete;
  ~DatabaseLock();

 private:
  explicit DatabaseLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace reprise::engine
