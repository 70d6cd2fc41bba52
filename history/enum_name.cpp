#include "history/enum_name.hpp"

#include <google/protobuf/descriptor.h>

#include <cctype>

namespace reprise {

namespace {

// WorkflowExecutionStatus -> "WORKFLOW_EXECUTION_STATUS_", the prefix
// protobuf's style guide gives every value of the enum.
std::string value_prefix(const std::string& type_name) {
  std::string prefix;
  for (size_t i = 0; i < type_name.size(); ++i) {
    const char c = type_name[i];
    if (i > 0 && std::isupper(static_cast<unsigned char>(c))) prefix += '_';
    prefix += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return prefix + "_";
}

}  // namespace

std::string enum_name(const google::protobuf::EnumDescriptor& type, int value) {
  const google::protobuf::EnumValueDescriptor* v = type.FindValueByNumber(value);
  if (v == nullptr) return "unknown value " + std::to_string(value);
  const std::string prefix = value_prefix(type.name());
  const std::string& full = v->name();
  return full.size() > prefix.size() && full.compare(0, prefix.size(), prefix) == 0 ? full.substr(prefix.size()) : full;
}

}  // namespace reprise
