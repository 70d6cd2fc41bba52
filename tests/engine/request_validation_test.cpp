// validate_request on messages with map fields, in process. The validator
// walks a map's entries through protobuf reflection (the map's repeated-field
// view), which runs code compiled inside libprotobuf on a MapField laid out
// by our own compiler: under ThreadSanitizer the two must agree
// (proto/protobuf_tsan_abi.hpp), or this crashes as StartWorkflow did.
#include "engine/request_validation.hpp"

#include <gtest/gtest.h>

#include <string>

#include "reprise/v1/service.pb.h"

namespace reprise::engine {
namespace {

v1::StartWorkflowRequest start_with_metadata() {
  v1::StartWorkflowRequest r;
  r.set_workflow_id("wf");
  r.mutable_workflow_type()->set_name("type");
  r.mutable_task_queue()->set_name("q");
  for (int i = 0; i < 3; ++i) {
    v1::Payload* p = r.mutable_input()->add_payloads();
    (*p->mutable_metadata())["encoding"] = "binary/msgpack";
    (*p->mutable_metadata())["n"] = std::to_string(i);
    p->set_data("x");
  }
  return r;
}

TEST(RequestValidation, MapEntriesAreCheckedAndStayReadable) {
  v1::StartWorkflowRequest r = start_with_metadata();
  ASSERT_TRUE(validate_request(r)) << "a request with payload metadata is valid";
  for (int i = 0; i < 3; ++i) {
    const auto& metadata = r.input().payloads(i).metadata();
    ASSERT_EQ(metadata.size(), 2u);
    EXPECT_EQ(metadata.at("encoding"), "binary/msgpack");
    EXPECT_EQ(metadata.at("n"), std::to_string(i));
  }
  // Validated again after the map was read back: the two views stay in step.
  EXPECT_TRUE(validate_request(r));
  EXPECT_EQ(r.input().payloads(2).metadata().at("n"), "2");

  v1::StartWorkflowRequest copy = r;  // the engine validates its own copy
  (*copy.mutable_input()->mutable_payloads(1)->mutable_metadata())[std::string(1001, 'k')] = "v";
  Status s = validate_request(copy);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("input.payloads[1].metadata["), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("].key is 1001 bytes, more than 1000"), std::string::npos) << s.message();
}

TEST(RequestValidation, ReflectionAndTheGeneratedMapApiAgree) {
  v1::Payload p;
  (*p.mutable_metadata())["encoding"] = "json/plain";
  const google::protobuf::Reflection& r = *p.GetReflection();
  const google::protobuf::FieldDescriptor* field = p.GetDescriptor()->FindFieldByName("metadata");
  ASSERT_EQ(r.FieldSize(p, field), 1);
  google::protobuf::Message* entry = r.MutableRepeatedMessage(&p, field, 0);
  const google::protobuf::FieldDescriptor* value = entry->GetDescriptor()->FindFieldByName("value");
  EXPECT_EQ(entry->GetReflection()->GetString(*entry, value), "json/plain");
  entry->GetReflection()->SetString(entry, value, "binary/plain");
  EXPECT_EQ(p.metadata().at("encoding"), "binary/plain");
}

}  // namespace
}  // namespace reprise::engine
