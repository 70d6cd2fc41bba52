// Task tokens as a worker hands them back (Complete/Fail/Heartbeat...): bytes
// the engine issued, or anything a buggy or hostile worker sends instead.
// Bytes not signed by the codec are refused; bytes that parse as a token
// proto are signed and must then decode to the same token if they name an
// execution and a task, or be refused as malformed.
#include <google/protobuf/util/message_differencer.h>

#include <cstdint>
#include <string>

#include "engine/execution/task_token_codec.hpp"
#include "tests/fuzz/fuzz_check.hpp"
#include "tests/fuzz/quiet_protobuf.hpp"

namespace {

using reprise::engine::TaskTokenCodec;
using reprise::engine::TaskTokenKey;

const TaskTokenCodec& codec() {
  static const TaskTokenCodec c({TaskTokenKey{7, std::string(32, 'k')}});
  return c;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  auto unsigned_bytes = codec().decode(bytes);
  FUZZ_CHECK(!unsigned_bytes.is_ok(), "bytes the codec never signed were accepted");

  reprise::internal::TaskToken parsed;
  if (!parsed.ParseFromString(bytes)) return 0;
  auto token = codec().decode(codec().encode(parsed));
  const bool names_a_task = !parsed.workflow_id().empty() && !parsed.run_id().empty() &&
                            (parsed.scheduled_event_id() > 0 || parsed.query_id() != 0);
  if (!names_a_task) {
    FUZZ_CHECK(!token.is_ok() && token.status().message() == "task_token is malformed",
               "a signed token that names no task: %s",
               token.is_ok() ? "accepted" : token.status().to_string().c_str());
    return 0;
  }
  FUZZ_CHECK(token.is_ok(), "a signed token does not decode: %s", token.status().to_string().c_str());
  FUZZ_CHECK(google::protobuf::util::MessageDifferencer::Equals(parsed, *token), "the token changed on the way");
  return 0;
}
