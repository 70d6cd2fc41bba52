// Short names of the protobuf enums in logs and error messages, for any
// value: a number no enum value has (an old or a hostile client's) gets a
// name too, never an exception.
#pragma once

#include <google/protobuf/generated_enum_reflection.h>

#include <string>

namespace reprise {

// "COMPLETED" for WORKFLOW_EXECUTION_STATUS_COMPLETED: the value's name
// without the prefix its enum gives every value; "unknown value 999" for a
// number the enum does not define.
std::string enum_name(const google::protobuf::EnumDescriptor& type, int value);

template <typename E>
std::string enum_name(E value) {
  return enum_name(*google::protobuf::GetEnumDescriptor<E>(), static_cast<int>(value));
}

}  // namespace reprise
