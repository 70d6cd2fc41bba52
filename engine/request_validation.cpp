#include "engine/request_validation.hpp"

#include <google/protobuf/descriptor.h>

#include <string>
#include <string_view>

namespace reprise::engine {

namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

constexpr std::string_view kCutMarker = " … (cut by the server)";
// Past the lowest year the timestamp arithmetic can reach (2262).
constexpr int64_t kMaxTimestampSeconds = 9'000'000'000;

bool is_free_text(const FieldDescriptor& field) {
  const std::string& n = field.name();
  return n == "message" || n == "stack_trace" || n == "reason" || n == "error_message";
}

bool is_token(const FieldDescriptor& field) {
  return field.name() == "task_token" || field.name() == "next_page_token";
}

std::string element_path(const std::string& path, const FieldDescriptor& field, int index) {
  std::string p = path.empty() ? field.name() : path + "." + field.name();
  if (index >= 0) p += "[" + std::to_string(index) + "]";
  return p;
}

class Validator {
 public:
  explicit Validator(const RequestLimits& limits) : limits_(limits) {}

  Status message(Message& m, const std::string& path, int failure_depth) {
    const Descriptor& type = *m.GetDescriptor();
    if (type.full_name() == "google.protobuf.Duration") return duration(m, path);
    if (type.full_name() == "google.protobuf.Timestamp") return timestamp(m, path);
    const bool failure = type.full_name() == "reprise.v1.Failure";
    if (failure) {
      ++failure_depth;
      if (failure_depth == limits_.max_failure_depth - 1) cut_cause(m);
    }
    const Reflection& r = *m.GetReflection();
    for (int i = 0; i < type.field_count(); ++i) {
      const FieldDescriptor& field = *type.field(i);
      if (field.is_repeated()) {
        const int n = r.FieldSize(m, &field);
        for (int j = 0; j < n; ++j) {
          REPRISE_RETURN_IF_ERROR(element(m, field, j, element_path(path, field, j), failure_depth, failure));
        }
      } else if (field.cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE || r.HasField(m, &field)) {
        REPRISE_RETURN_IF_ERROR(element(m, field, -1, element_path(path, field, -1), failure_depth, failure));
      }
    }
    return Status::ok();
  }

 private:
  Status element(Message& m, const FieldDescriptor& field, int index, const std::string& path, int failure_depth,
                 bool in_failure) {
    const Reflection& r = *m.GetReflection();
    const bool repeated = index >= 0;
    switch (field.cpp_type()) {
      case FieldDescriptor::CPPTYPE_MESSAGE: {
        Message& child = repeated ? *r.MutableRepeatedMessage(&m, &field, index) : *r.MutableMessage(&m, &field);
        return message(child, path, failure_depth);
      }
      case FieldDescriptor::CPPTYPE_ENUM: {
        const int value = repeated ? r.GetRepeatedEnumValue(m, &field, index) : r.GetEnumValue(m, &field);
        if (field.enum_type()->FindValueByNumber(value) == nullptr) {
          return Status::invalid_argument(path + " has unknown value " + std::to_string(value) + " (not a " +
                                          field.enum_type()->name() + ")");
        }
        return Status::ok();
      }
      case FieldDescriptor::CPPTYPE_STRING: {
        std::string scratch;
        const std::string& value = repeated ? r.GetRepeatedStringReference(m, &field, index, &scratch)
                                            : r.GetStringReference(m, &field, &scratch);
        if (field.type() == FieldDescriptor::TYPE_BYTES) {
          if (is_token(field) && value.size() > limits_.max_token_bytes) {
            return Status::invalid_argument(path + " is " + std::to_string(value.size()) + " bytes, more than " +
                                            std::to_string(limits_.max_token_bytes));
          }
          return Status::ok();  // payload bytes are bounded by the payload limits
        }
        if (in_failure || is_free_text(field)) {
          if (value.size() > limits_.max_text_bytes) {
            std::string cut = value.substr(0, cut_point(value, limits_.max_text_bytes));
            cut += kCutMarker;
            repeated ? r.SetRepeatedString(&m, &field, index, std::move(cut)) : r.SetString(&m, &field, std::move(cut));
          }
          return Status::ok();
        }
        if (value.size() > limits_.max_identifier_bytes) {
          return Status::invalid_argument(path + " is " + std::to_string(value.size()) + " bytes, more than " +
                                          std::to_string(limits_.max_identifier_bytes));
        }
        return Status::ok();
      }
      default:
        return Status::ok();
    }
  }

  // The cut never splits a UTF-8 sequence (protobuf refuses to serialize
  // invalid UTF-8 in a string field).
  static size_t cut_point(const std::string& s, size_t limit) {
    size_t at = limit;
    while (at > 0 && (static_cast<unsigned char>(s[at]) & 0xC0) == 0x80) --at;
    return at;
  }

  // The failure one above the deepest allowed level keeps its own fields;
  // its causes are replaced by one failure saying how many were dropped.
  void cut_cause(Message& failure) {
    const Descriptor& type = *failure.GetDescriptor();
    const FieldDescriptor* cause = type.FindFieldByName("cause");
    const Reflection& r = *failure.GetReflection();
    if (!r.HasField(failure, cause)) return;
    int dropped = 0;
    for (const Message* c = &r.GetMessage(failure, cause); c != nullptr;) {
      ++dropped;
      c = c->GetReflection()->HasField(*c, cause) ? &c->GetReflection()->GetMessage(*c, cause) : nullptr;
    }
    Message* marker = r.MutableMessage(&failure, cause);
    marker->Clear();
    const Reflection& mr = *marker->GetReflection();
    mr.SetString(marker, type.FindFieldByName("message"),
                 std::to_string(dropped) + " more causes were cut by the server (a failure chain may be " +
                     std::to_string(limits_.max_failure_depth) + " deep)");
    mr.SetString(marker, type.FindFieldByName("source"), "server");
  }

  Status duration(Message& m, const std::string& path) {
    const Reflection& r = *m.GetReflection();
    const int64_t seconds = r.GetInt64(m, m.GetDescriptor()->FindFieldByName("seconds"));
    const int32_t nanos = r.GetInt32(m, m.GetDescriptor()->FindFieldByName("nanos"));
    if (seconds < 0 || nanos < 0) return Status::invalid_argument(path + " must not be negative");
    if (nanos >= 1'000'000'000) return Status::invalid_argument(path + ".nanos must be below 1,000,000,000");
    if (seconds > limits_.max_duration_seconds) {
      return Status::invalid_argument(path + " is " + std::to_string(seconds) + " s, more than the " +
                                      std::to_string(limits_.max_duration_seconds) + " s (100 years) allowed");
    }
    return Status::ok();
  }

  static Status timestamp(Message& m, const std::string& path) {
    const Reflection& r = *m.GetReflection();
    const int64_t seconds = r.GetInt64(m, m.GetDescriptor()->FindFieldByName("seconds"));
    const int32_t nanos = r.GetInt32(m, m.GetDescriptor()->FindFieldByName("nanos"));
    if (nanos < 0 || nanos >= 1'000'000'000) return Status::invalid_argument(path + ".nanos must be in [0, 1e9)");
    if (seconds < 0 || seconds > kMaxTimestampSeconds) {
      return Status::invalid_argument(path + " is outside 1970 to 2255");
    }
    return Status::ok();
  }

  const RequestLimits& limits_;
};

}  // namespace

Status validate_request(Message& request, const RequestLimits& limits) {
  return Validator(limits).message(request, "", 0);
}

}  // namespace reprise::engine
