// A thin RAII layer over one libpq connection: typed parameters, binary
// results, prepared statements cached per connection, and errors as Status
// values that name the database (its URL without the password).
//
// Every integer the store keeps is a BIGINT, so every integer parameter is
// sent as int8 and every integer column comes back as 8 binary bytes.
//
// Thread safety: a PgConnection is used by one thread at a time (the store
// hands connections out from a pool, or owns one on its writer thread).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/store/database_url.hpp"
#include "history/status.hpp"

struct pg_conn;
struct pg_result;

namespace reprise::engine {

// Parameters $1, $2, ... in order, each typed.
class PgParams {
 public:
  PgParams& add(int64_t value);
  PgParams& add_text(std::string_view text);
  PgParams& add_bytes(std::string_view bytes);
  PgParams& add_null_int();

  int size() const { return static_cast<int>(types_.size()); }
  const std::vector<unsigned>& types() const { return types_; }

 private:
  friend class PgConnection;
  std::vector<unsigned> types_;  // PostgreSQL type oids
  std::vector<std::string> values_;
  std::vector<bool> nulls_;
  std::vector<int> formats_;  // 1: binary
};

// A statement's answer: its rows (binary) and how many rows it changed.
class PgResult {
 public:
  explicit PgResult(pg_result* result);
  ~PgResult();
  PgResult(PgResult&& other) noexcept : result_(other.result_) { other.result_ = nullptr; }
  PgResult& operator=(PgResult&& other) noexcept;
  PgResult(const PgResult&) = delete;
  PgResult& operator=(const PgResult&) = delete;

  int rows() const;
  int64_t affected() const;  // INSERT/UPDATE/DELETE: the rows changed
  bool is_null(int row, int column) const;
  int64_t get_int(int row, int column) const;        // int8, int4, int2 or bool
  std::string get_bytes(int row, int column) const;  // text or bytea, as stored

 private:
  pg_result* result_;
};

class PgConnection {
 public:
  // `url`: postgresql://user[:password]@host[:port]/database[?options].
  static Result<std::unique_ptr<PgConnection>> connect(const std::string& url);
  ~PgConnection();
  PgConnection(const PgConnection&) = delete;
  PgConnection& operator=(const PgConnection&) = delete;

  // Statements without parameters (several, separated by ';').
  Status exec(const std::string& sql);
  // One statement, prepared once per connection and then reused.
  Result<PgResult> query(const std::string& sql, const PgParams& params = {});

  // Prepares `sql` once per connection (query() does it itself; send()
  // needs it done before the pipeline starts); its name.
  Result<std::string> prepare(const std::string& sql, const PgParams& params);

  // Pipeline mode (libpq 14+): statements are sent without waiting for
  // their answers, and the answers read back in order after sync().
  Status enter_pipeline();
  Status send(const std::string& sql, const PgParams& params);
  Status sync();
  // The answer of the next statement sent; an error for a statement that
  // failed, or that the server skipped because an earlier one failed.
  Result<PgResult> next_result();
  // Reads up to and including the sync's marker, then leaves pipeline mode.
  Status exit_pipeline();

  // The connection is gone (the server restarted, the network broke).
  bool broken() const;
  // Connects again (prepared statements are forgotten; set_session()'s
  // settings are made again).
  Status reconnect();
  // Runs `sql` (a SET) now and after every reconnect: a setting of this
  // connection's sessions.
  Status set_session(const std::string& sql);
  // The database's URL without its password, for messages.
  const std::string& name() const { return name_; }
  // A status for what the server said last (or `what` when it said nothing).
  Status error(const std::string& what) const;
  // Whether a statement since the last call failed because the database's
  // disk is full (SQLSTATE 53100): the writer then waits for room rather
  // than failing the write (write_stall.hpp).
  bool take_out_of_space() { return std::exchange(out_of_space_, false); }
  bool out_of_space() const { return out_of_space_; }

 private:
  PgConnection(pg_conn* conn, std::string url, std::string name);
  Status status_of(pg_result* result, const std::string& what) const;

  pg_conn* conn_;
  std::string url_;
  std::string name_;
  std::map<std::string, std::string> statements_;  // sql -> prepared name
  std::vector<std::string> session_settings_;
  mutable bool out_of_space_ = false;  // set by status_of()
};

}  // namespace reprise::engine
