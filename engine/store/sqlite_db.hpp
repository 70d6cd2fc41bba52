// A thin RAII layer over one sqlite3 connection: errors become Status values
// that name the database file, and prepared statements are cached per
// connection so hot paths never re-parse SQL.
//
// Thread safety: a SqliteDb is used by one thread at a time (the store hands
// connections out from a pool, or owns one on its writer thread).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "history/status.hpp"

struct sqlite3;
struct sqlite3_stmt;

namespace reprise::engine {

class SqliteDb;

// A prepared statement, reset and unbound when the handle goes out of scope.
class Statement {
 public:
  // A cached statement is reset on destruction; an owned one is finalized.
  Statement(SqliteDb& db, sqlite3_stmt* stmt, bool owned) : db_(&db), stmt_(stmt), owned_(owned) {}
  ~Statement();
  Statement(Statement&& other) noexcept : db_(other.db_), stmt_(other.stmt_), owned_(other.owned_) {
    other.stmt_ = nullptr;
  }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  // Binds are 1-based, like SQLite's.
  Statement& bind(int index, int64_t value);
  Statement& bind(int index, std::string_view text);  // TEXT
  Statement& bind_blob(int index, std::string_view bytes);
  Statement& bind_null(int index);

  // Runs one step: true when a row is ready, false when done.
  Result<bool> step();
  // Runs to completion, for statements that return no rows.
  Status run();

  int64_t column_int(int index) const;
  std::string column_text(int index) const;
  std::string column_blob(int index) const;
  std::string_view column_blob_view(int index) const;  // valid until the next step
  bool column_is_null(int index) const;

 private:
  SqliteDb* db_;
  sqlite3_stmt* stmt_;
  bool owned_;
};

enum class Durability {
  // fsync the WAL at every commit: an acknowledged transition survives a
  // power loss. The default.
  kFull,
  // fsync only at checkpoints: survives a process crash, may lose the last
  // transitions on power loss or an OS crash.
  kNormal,
};

enum class CheckpointMode {
  // Copies what no reader still needs from the WAL into the database; waits
  // for nobody, and the writer goes on writing meanwhile.
  kPassive,
  // Waits (busy timeout) for the writer and for every reader to be past the
  // WAL's end, copies all of it, and has the next write start the WAL over.
  // Writers wait while it does.
  kRestart,
};

// sqlite3_wal_checkpoint_v2's answer, in pages (frames) of the WAL.
struct CheckpointOutcome {
  bool busy = false;         // a restart could not wait long enough
  int64_t wal_pages = 0;     // in the WAL
  int64_t copied_pages = 0;  // of those, in the database now (cumulative over the WAL's life)
};

// What a connection reports it runs with (PRAGMA synchronous, journal_mode):
// the settings configure() makes, read back.
struct ConnectionSettings {
  int synchronous = -1;  // 0 OFF, 1 NORMAL, 2 FULL, 3 EXTRA
  std::string journal_mode;
};

class SqliteDb {
 public:
  // How long a statement waits for a lock before SQLITE_BUSY, unless told.
  static constexpr std::chrono::milliseconds kBusyTimeout{10'000};
  // Opens (creating if `create`) the file and sets WAL mode, the durability
  // level and a busy timeout. `vfs` names a registered SQLite VFS to open it
  // through; "" is SQLite's default (tests simulate a power loss with one).
  static Result<std::unique_ptr<SqliteDb>> open(const std::string& path, bool create, Durability durability,
                                                const std::string& vfs = "");
  // Opens the file for reading and writing with only a busy timeout: nothing
  // is written to it yet (setting WAL mode rewrites the header of a file in
  // another mode), so it can be looked at before the store takes it over.
  // configure() then does what open() does.
  static Result<std::unique_ptr<SqliteDb>> open_as_is(const std::string& path, bool create,
                                                      const std::string& vfs = "");
  Status configure(Durability durability);
  Result<ConnectionSettings> settings();
  // Opens an existing file read-only (SQLITE_OPEN_READONLY): for checking a
  // file, also while a server writes to it (WAL lets a reader beside it).
  static Result<std::unique_ptr<SqliteDb>> open_read_only(const std::string& path);
  ~SqliteDb();

  Status exec(const char* sql);
  // exec() of a statement run at every commit (BEGIN, SAVEPOINT, RELEASE,
  // COMMIT), prepared once and cached rather than parsed at every call;
  // `sql` is a string literal.
  Status exec_cached(const char* sql);
  // A cached prepared statement for SQL that is a string literal.
  Result<Statement> prepare(const char* sql);
  // A statement for SQL built at run time, finalized after use.
  Result<Statement> prepare_uncached(const std::string& sql);

  int64_t changes() const;
  // Adds one to `counter` at every commit on this connection (the store
  // counts its transactions); `counter` must outlive the connection.
  void count_commits(std::atomic<int64_t>* counter);
  bool in_transaction() const;
  // Turns SQLite's automatic checkpoint off on this connection (it would run
  // inside COMMIT, on the committing thread) and calls `after_commit` with
  // the WAL's size in pages after each commit of this connection, on the
  // committing thread, instead.
  void replace_auto_checkpoint(std::function<void(int64_t wal_pages)> after_commit);
  Result<CheckpointOutcome> checkpoint(CheckpointMode mode);
  // How long a statement waits for a lock before SQLITE_BUSY.
  void set_busy_timeout(std::chrono::milliseconds timeout);
  const std::string& path() const { return path_; }

  // A Status for the connection's last error: its code mapped to ours and a
  // message naming the file, "what" and SQLite's explanation.
  Status error(int rc, std::string_view what) const;
  // Whether an error since the last call was the disk (or the file size
  // limit) having no room for a write; clears it.
  bool take_out_of_space() { return std::exchange(out_of_space_, false); }
  bool out_of_space() const { return out_of_space_; }

  sqlite3* handle() { return db_; }

 private:
  SqliteDb(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  // sqlite3_open_v2 with `flags`, extended result codes and a busy timeout.
  static Result<std::unique_ptr<SqliteDb>> connect(const std::string& path, int flags, const std::string& vfs);
  sqlite3* db_;
  std::string path_;
  std::map<const char*, sqlite3_stmt*> cache_;
  std::function<void(int64_t)> after_commit_;  // replace_auto_checkpoint()
  mutable bool out_of_space_ = false;          // set by error()
};

}  // namespace reprise::engine
