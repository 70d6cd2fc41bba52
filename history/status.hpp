// Status and Result<T>: how core code (history, engine, worker internals)
// reports errors. A Status is a small value: a code from a fixed set (the same
// set as gRPC's, so the server maps it one to one) and a message that names
// what was wrong. Result<T> is a T or a non-OK Status.
//
// Thread safety: values; copy them freely.
#pragma once

#include <cassert>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace reprise {

enum class StatusCode : int {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,   // limits, full disk
  kFailedPrecondition = 9,  // wrong state, e.g. newer schema
  kAborted = 10,            // lost a conditional write: stale version or token
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,  // corrupt or truncated data
  kUnauthenticated = 16,
};

std::string_view status_code_name(StatusCode code);

// The trailing-metadata key that carries Status::retryable() over gRPC
// (value "1"), set by reprise-server and read by the SDK.
inline constexpr const char* kRetryableTrailer = "reprise-retryable";

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return {}; }
  static Status invalid_argument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
  static Status not_found(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
  static Status already_exists(std::string m) { return {StatusCode::kAlreadyExists, std::move(m)}; }
  static Status failed_precondition(std::string m) { return {StatusCode::kFailedPrecondition, std::move(m)}; }
  static Status deadline_exceeded(std::string m) { return {StatusCode::kDeadlineExceeded, std::move(m)}; }
  static Status aborted(std::string m) { return {StatusCode::kAborted, std::move(m)}; }
  static Status resource_exhausted(std::string m) { return {StatusCode::kResourceExhausted, std::move(m)}; }
  static Status data_loss(std::string m) { return {StatusCode::kDataLoss, std::move(m)}; }
  static Status unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
  static Status internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
  static Status permission_denied(std::string m) { return {StatusCode::kPermissionDenied, std::move(m)}; }
  static Status unauthenticated(std::string m) { return {StatusCode::kUnauthenticated, std::move(m)}; }
  // RESOURCE_EXHAUSTED from back-pressure: nothing was done, and the same
  // request may be sent again after a pause (unlike a limit on the workflow
  // itself, which a retry hits again).
  static Status busy(std::string m) {
    Status s(StatusCode::kResourceExhausted, std::move(m));
    s.retryable_ = true;
    return s;
  }
  // UNAVAILABLE from a shard moving between the nodes of a cluster: nothing
  // was done, and the same request sent again after a pause reaches the
  // shard's new owner.
  static Status moved(std::string m) {
    Status s(StatusCode::kUnavailable, std::move(m));
    s.retryable_ = true;
    return s;
  }

  // UNAVAILABLE from a write whose answer was lost after it was sent to be
  // committed (PostgreSQL's connection dropped at COMMIT): it may or may
  // not have been committed. The caller must act as if it may have been.
  static Status in_doubt(std::string m) {
    Status s(StatusCode::kUnavailable, std::move(m));
    s.in_doubt_ = true;
    return s;
  }

  bool is_ok() const { return code_ == StatusCode::kOk; }
  explicit operator bool() const { return is_ok(); }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // Made by busy() or moved(): try the same request again later.
  bool retryable() const { return retryable_; }
  // Made by in_doubt().
  bool in_doubt() const { return in_doubt_; }

  // "ABORTED: execution wf-1/run-2 was changed by another writer"
  std::string to_string() const;

  // Returns a copy whose message is "context: message"; OK stays OK.
  Status with_context(std::string_view context) const;

  friend bool operator==(const Status&, const Status&) = default;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
  bool retryable_ = false;
  bool in_doubt_ = false;
};

// A value or the error that prevented it. Constructing from an OK Status is a
// bug (there would be no value) and asserts.
template <typename T>
class [[nodiscard]] Result {
 public:
  using value_type = T;

  Result(T value) : v_(std::move(value)) {}
  Result(Status status) : v_(std::move(status)) { assert(!std::get<Status>(v_).is_ok()); }

  bool is_ok() const { return v_.index() == 0; }
  explicit operator bool() const { return is_ok(); }

  const Status& status() const {
    static const Status kOk;
    return is_ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  // Rvalue access returns the value itself, so `for (auto& x : *f())` owns
  // what it iterates instead of dangling into a destroyed Result.
  T value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T operator*() && { return std::move(*this).value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace reprise

// Returns early from a function returning Status or Result<T> on error.
#define REPRISE_RETURN_IF_ERROR(expr)                     \
  do {                                                    \
    ::reprise::Status reprise_status_ = (expr);           \
    if (!reprise_status_.is_ok()) return reprise_status_; \
  } while (0)
