#include "engine/server/proto_json.hpp"

#include <google/protobuf/duration.pb.h>
#include <google/protobuf/timestamp.pb.h>
#include <google/protobuf/util/time_util.h>

#include "history/enum_name.hpp"
#include "history/payload_json.hpp"
#include "reprise/v1/common.pb.h"

namespace reprise::engine {

namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;
using google::protobuf::util::TimeUtil;

nlohmann::json value_json(const Message& message, const Reflection& reflection, const FieldDescriptor& field,
                          int index) {
  const bool repeated = field.is_repeated();
  switch (field.cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      return repeated ? reflection.GetRepeatedInt32(message, &field, index) : reflection.GetInt32(message, &field);
    case FieldDescriptor::CPPTYPE_INT64:
      return repeated ? reflection.GetRepeatedInt64(message, &field, index) : reflection.GetInt64(message, &field);
    case FieldDescriptor::CPPTYPE_UINT32:
      return repeated ? reflection.GetRepeatedUInt32(message, &field, index) : reflection.GetUInt32(message, &field);
    case FieldDescriptor::CPPTYPE_UINT64:
      return repeated ? reflection.GetRepeatedUInt64(message, &field, index) : reflection.GetUInt64(message, &field);
    case FieldDescriptor::CPPTYPE_DOUBLE:
      return repeated ? reflection.GetRepeatedDouble(message, &field, index) : reflection.GetDouble(message, &field);
    case FieldDescriptor::CPPTYPE_FLOAT:
      return repeated ? reflection.GetRepeatedFloat(message, &field, index) : reflection.GetFloat(message, &field);
    case FieldDescriptor::CPPTYPE_BOOL:
      return repeated ? reflection.GetRepeatedBool(message, &field, index) : reflection.GetBool(message, &field);
    case FieldDescriptor::CPPTYPE_ENUM: {
      const int value =
          repeated ? reflection.GetRepeatedEnumValue(message, &field, index) : reflection.GetEnumValue(message, &field);
      return enum_name(*field.enum_type(), value);
    }
    case FieldDescriptor::CPPTYPE_STRING: {
      const std::string text =
          repeated ? reflection.GetRepeatedString(message, &field, index) : reflection.GetString(message, &field);
      if (field.type() == FieldDescriptor::TYPE_BYTES) return history::hex_digest(text);
      // A string from a client need not be UTF-8: the caller dumps the JSON
      // with error_handler_t::replace (U+FFFD), never the throwing default.
      return text;
    }
    case FieldDescriptor::CPPTYPE_MESSAGE:
      return message_to_json(repeated ? reflection.GetRepeatedMessage(message, &field, index)
                                      : reflection.GetMessage(message, &field));
  }
  return nullptr;
}

}  // namespace

nlohmann::json message_to_json(const Message& message) {
  if (const auto* payload = dynamic_cast<const v1::Payload*>(&message)) return history::payload_to_json(*payload);
  if (const auto* payloads = dynamic_cast<const v1::Payloads*>(&message)) return history::payloads_to_json(*payloads);
  if (const auto* time = dynamic_cast<const google::protobuf::Timestamp*>(&message)) return TimeUtil::ToString(*time);
  if (const auto* duration = dynamic_cast<const google::protobuf::Duration*>(&message)) {
    return TimeUtil::ToString(*duration);
  }
  const Reflection& reflection = *message.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  reflection.ListFields(message, &fields);
  nlohmann::json out = nlohmann::json::object();
  for (const FieldDescriptor* field : fields) {
    if (field->is_map()) {
      nlohmann::json map = nlohmann::json::object();
      const FieldDescriptor* key = field->message_type()->map_key();
      const FieldDescriptor* value = field->message_type()->map_value();
      for (int i = 0; i < reflection.FieldSize(message, field); ++i) {
        const Message& entry = reflection.GetRepeatedMessage(message, field, i);
        const nlohmann::json k = value_json(entry, *entry.GetReflection(), *key, 0);
        map[k.is_string() ? k.get<std::string>() : k.dump()] = value_json(entry, *entry.GetReflection(), *value, 0);
      }
      out[field->name()] = std::move(map);
    } else if (field->is_repeated()) {
      nlohmann::json list = nlohmann::json::array();
      for (int i = 0; i < reflection.FieldSize(message, field); ++i) {
        list.push_back(value_json(message, reflection, *field, i));
      }
      out[field->name()] = std::move(list);
    } else {
      out[field->name()] = value_json(message, reflection, *field, 0);
    }
  }
  return out;
}

}  // namespace reprise::engine
