#include "engine/store/database_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace reprise::engine {

Result<DatabaseLock> DatabaseLock::acquire(const std::string& path) {
  const std::string lock_path = path + "-lock";
  int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  // flock needs no write access: an existing lock file on a read-only file
  // system still locks, and the store's open then names the real problem.
  if (fd < 0 && (errno == EROFS || errno == EACCES)) fd = ::open(lock_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    const std::string problem =
        "cannot create '" + lock_path + "' to lock database '" + path + "': " + std::strerror(err);
    if (err == EROFS || err == EACCES) {
      return Status::permission_denied(problem + "; the store needs to write beside the database");
    }
    return Status::failed_precondition(problem);
  }
  int rc = 0;
  do {
    rc = ::flock(fd, LOCK_EX | LOCK_NB);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    const int err = errno;
    ::close(fd);
    if (err == EWOULDBLOCK) {
      return Status::failed_precondition("database '" + path +
                                         "' is in use by another reprise-server or embedded engine (it holds '" +
                                         lock_path + "'); one server per database file");
    }
    return Status::failed_precondition("cannot lock '" + lock_path + "' for database '" + path +
                                       "': " + std::strerror(err));
  }
  return DatabaseLock(fd);
}

DatabaseLock::DatabaseLock(DatabaseLock&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

DatabaseLock& DatabaseLock::operator=(DatabaseLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

DatabaseLock::~DatabaseLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the flock
}

}  // namespace reprise::engine
