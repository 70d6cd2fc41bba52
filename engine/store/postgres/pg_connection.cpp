#include "engine/store/postgres/pg_connection.hpp"

#include <libpq-fe.h>

#include <cstring>

namespace reprise::engine {

namespace {

// PostgreSQL's type oids (catalog/pg_type.h, stable across versions).
constexpr unsigned kInt8Oid = 20;
constexpr unsigned kTextOid = 25;
constexpr unsigned kByteaOid = 17;

std::string trimmed(const char* message) {
  std::string s = message == nullptr ? "" : message;
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// Errors by SQLSTATE class: what a caller can do about each.
StatusCode code_for(const std::string& sqlstate) {
  if (sqlstate.rfind("08", 0) == 0 || sqlstate == "57P01" || sqlstate == "57P02" || sqlstate == "57P03") {
    return StatusCode::kUnavailable;  // connection lost, server shutting down or starting
  }
  if (sqlstate == "40001" || sqlstate == "40P01") return StatusCode::kAborted;  // serialization, deadlock
  if (sqlstate.rfind("53", 0) == 0) return StatusCode::kResourceExhausted;      // disk full, out of memory
  if (sqlstate == "23505") return StatusCode::kAlreadyExists;
  if (sqlstate == "42501" || sqlstate.rfind("28", 0) == 0) return StatusCode::kPermissionDenied;
  return StatusCode::kInternal;
}

}  // namespace

PgParams& PgParams::add(int64_t value) {
  std::string bytes(8, '\0');
  const uint64_t v = static_cast<uint64_t>(value);
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>(v >> (56 - 8 * i));
  types_.push_back(kInt8Oid);
  values_.push_back(std::move(bytes));
  nulls_.push_back(false);
  formats_.push_back(1);
  return *this;
}

PgParams& PgParams::add_text(std::string_view text) {
  types_.push_back(kTextOid);
  values_.emplace_back(text);
  nulls_.push_back(false);
  formats_.push_back(1);  // binary text is the bytes themselves
  return *this;
}

PgParams& PgParams::add_bytes(std::string_view bytes) {
  types_.push_back(kByteaOid);
  values_.emplace_back(bytes);
  nulls_.push_back(false);
  formats_.push_back(1);
  return *this;
}

PgParams& PgParams::add_null_int() {
  types_.push_back(kInt8Oid);
  values_.emplace_back();
  nulls_.push_back(true);
  formats_.push_back(1);
  return *this;
}

PgResult::PgResult(pg_result* result) : result_(result) {}

PgResult::~PgResult() {
  if (result_ != nullptr) PQclear(result_);
}

PgResult& PgResult::operator=(PgResult&& other) noexcept {
  if (this != &other) {
    if (result_ != nullptr) PQclear(result_);
    result_ = other.result_;
    other.result_ = nullptr;
  }
  return *this;
}

int PgResult::rows() const { return PQntuples(result_); }

int64_t PgResult::affected() const {
  const char* n = PQcmdTuples(result_);
  return n == nullptr || *n == '\0' ? 0 : std::strtoll(n, nullptr, 10);
}

bool PgResult::is_null(int row, int column) const { return PQgetisnull(result_, row, column) != 0; }

int64_t PgResult::get_int(int row, int column) const {
  const auto* p = reinterpret_cast<const unsigned char*>(PQgetvalue(result_, row, column));
  const int length = PQgetlength(result_, row, column);
  uint64_t v = 0;
  for (int i = 0; i < length; ++i) v = v << 8 | p[i];
  // Sign-extend the narrower types.
  if (length > 0 && length < 8 && (p[0] & 0x80) != 0) v |= ~uint64_t{0} << (8 * length);
  return static_cast<int64_t>(v);
}

std::string PgResult::get_bytes(int row, int column) const {
  return std::string(PQgetvalue(result_, row, column), static_cast<size_t>(PQgetlength(result_, row, column)));
}

Result<std::unique_ptr<PgConnection>> PgConnection::connect(const std::string& url) {
  const std::string name = redact_password(url);
  pg_conn* conn = PQconnectdb(url.c_str());
  if (conn == nullptr) return Status::unavailable("cannot connect to database '" + name + "': out of memory");
  if (PQstatus(conn) != CONNECTION_OK) {
    const std::string why = trimmed(PQerrorMessage(conn));
    PQfinish(conn);
    return Status::unavailable("cannot connect to database '" + name + "': " + why);
  }
  auto c = std::unique_ptr<PgConnection>(new PgConnection(conn, url, name));
  // Reprise's messages quote the server's; keep them in one language, and
  // keep NOTICEs (CREATE ... IF NOT EXISTS) off stderr.
  PQsetNoticeProcessor(
      conn, [](void*, const char*) {}, nullptr);
  return c;
}

PgConnection::PgConnection(pg_conn* conn, std::string url, std::string name)
    : conn_(conn), url_(std::move(url)), name_(std::move(name)) {}

PgConnection::~PgConnection() { PQfinish(conn_); }

Status PgConnection::status_of(pg_result* result, const std::string& what) const {
  const ExecStatusType st = PQresultStatus(result);
  if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK || st == PGRES_PIPELINE_SYNC) return Status::ok();
  if (st == PGRES_PIPELINE_ABORTED) {
    return Status::aborted("database '" + name_ + "': skipped after an earlier statement failed");
  }
  const char* state = PQresultErrorField(result, PG_DIAG_SQLSTATE);
  const std::string sqlstate = state == nullptr ? "" : state;
  std::string message = trimmed(PQresultErrorMessage(result));
  if (message.empty()) message = trimmed(PQerrorMessage(conn_));
  const StatusCode code = sqlstate.empty() && broken() ? StatusCode::kUnavailable : code_for(sqlstate);
  std::string context = what;
  if (sqlstate == "53100") {  // disk_full
    out_of_space_ = true;
    context = "the disk holding it is full: " + what;
  }
  return Status(code, "database '" + name_ + "': " + context + ": " + message +
                          (sqlstate.empty() ? "" : " (SQLSTATE " + sqlstate + ")"));
}

Status PgConnection::error(const std::string& what) const {
  std::string message = trimmed(PQerrorMessage(conn_));
  if (message.empty()) message = "no answer";
  return Status(broken() ? StatusCode::kUnavailable : StatusCode::kInternal,
                "database '" + name_ + "': " + what + ": " + message);
}

Status PgConnection::exec(const std::string& sql) {
  pg_result* r = PQexec(conn_, sql.c_str());
  if (r == nullptr) return error(sql.substr(0, 40));
  Status s = status_of(r, sql.substr(0, sql.find_first_of("\n(")));
  PQclear(r);
  return s;
}

Result<std::string> PgConnection::prepare(const std::string& sql, const PgParams& params) {
  auto found = statements_.find(sql);
  if (found != statements_.end()) return found->second;
  const std::string name = "reprise_" + std::to_string(statements_.size());
  pg_result* r = PQprepare(conn_, name.c_str(), sql.c_str(), params.size(), params.types().data());
  if (r == nullptr) return error("preparing " + sql);
  Status s = status_of(r, "preparing " + sql);
  PQclear(r);
  if (!s.is_ok()) return s;
  statements_.emplace(sql, name);
  return name;
}

namespace {
struct Raw {
  std::vector<const char*> values;
  std::vector<int> lengths;
};
Raw raw_params(const PgParams& params, const std::vector<std::string>& values, const std::vector<bool>& nulls) {
  Raw raw;
  for (int i = 0; i < params.size(); ++i) {
    raw.values.push_back(nulls[i] ? nullptr : values[i].data());
    raw.lengths.push_back(static_cast<int>(values[i].size()));
  }
  return raw;
}
}  // namespace

Result<PgResult> PgConnection::query(const std::string& sql, const PgParams& params) {
  Result<std::string> name = prepare(sql, params);
  if (!name) return name.status();
  Raw raw = raw_params(params, params.values_, params.nulls_);
  pg_result* r = PQexecPrepared(conn_, name->c_str(), params.size(), raw.values.data(), raw.lengths.data(),
                                params.formats_.data(), 1);
  if (r == nullptr) return error(sql);
  PgResult result(r);
  Status s = status_of(r, sql);
  if (!s.is_ok()) return s;
  return result;
}

Status PgConnection::enter_pipeline() {
  if (PQenterPipelineMode(conn_) != 1) return error("entering pipeline mode");
  return Status::ok();
}

Status PgConnection::send(const std::string& sql, const PgParams& params) {
  // Prepared outside the pipeline: PQprepare waits for its answer.
  auto found = statements_.find(sql);
  if (found == statements_.end()) return Status::internal("statement not prepared before the pipeline: " + sql);
  Raw raw = raw_params(params, params.values_, params.nulls_);
  if (PQsendQueryPrepared(conn_, found->second.c_str(), params.size(), raw.values.data(), raw.lengths.data(),
                          params.formats_.data(), 1) != 1) {
    return error("sending " + sql);
  }
  return Status::ok();
}

Status PgConnection::sync() {
  if (PQpipelineSync(conn_) != 1) return error("pipeline sync");
  return Status::ok();
}

Result<PgResult> PgConnection::next_result() {
  pg_result* r = PQgetResult(conn_);
  if (r == nullptr) return error("reading a pipelined answer");
  PgResult result(r);
  // Each statement's answer is followed by a null that ends it.
  if (PQresultStatus(r) != PGRES_PIPELINE_SYNC) {
    pg_result* end = PQgetResult(conn_);
    if (end != nullptr) PQclear(end);
  }
  Status s = status_of(r, "pipelined statement");
  if (!s.is_ok()) return s;
  return result;
}

Status PgConnection::exit_pipeline() {
  // Drain to the sync's marker (what is left after an error).
  while (PQpipelineStatus(conn_) != PQ_PIPELINE_OFF) {
    pg_result* r = PQgetResult(conn_);
    if (r == nullptr) {
      if (PQexitPipelineMode(conn_) == 1) break;
      if (broken()) return error("leaving pipeline mode");
      continue;
    }
    const bool at_sync = PQresultStatus(r) == PGRES_PIPELINE_SYNC;
    PQclear(r);
    if (at_sync && PQexitPipelineMode(conn_) != 1) return error("leaving pipeline mode");
  }
  return Status::ok();
}

bool PgConnection::broken() const { return PQstatus(conn_) != CONNECTION_OK; }

Status PgConnection::reconnect() {
  statements_.clear();
  PQreset(conn_);
  if (broken()) return error("reconnecting");
  PQsetNoticeProcessor(
      conn_, [](void*, const char*) {}, nullptr);
  for (const std::string& setting : session_settings_) REPRISE_RETURN_IF_ERROR(exec(setting));
  return Status::ok();
}

Status PgConnection::set_session(const std::string& sql) {
  REPRISE_RETURN_IF_ERROR(exec(sql));
  session_settings_.push_back(sql);
  return Status::ok();
}

}  // namespace reprise::engine
