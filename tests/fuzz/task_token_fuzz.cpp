// Task tokens as a worker hands them back (Complete/Fail/Heartbeat...): bytes
// the engine issued, or anything a buggy or hostile worker sends instead. A
// token must decode to one naming an execution and a task, or be refused; a
// token that decodes must come out the same after encoding again.
#include <google/protobuf/util/message_differencer.h>

#include <cstdint>
#include <string>

#include "engine/execution/mutable_state.hpp"
#include "tests/fuzz/fuzz_check.hpp"
#include "tests/fuzz/quiet_protobuf.hpp"

namespace {

using reprise::engine::MutableState;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  auto token = MutableState::decode_token(bytes);
  if (!token.is_ok()) {
    FUZZ_CHECK(token.status().message() == "task_token is malformed", "unexpected error: %s",
               token.status().to_string().c_str());
    return 0;
  }
  FUZZ_CHECK(!token->workflow_id().empty() && !token->run_id().empty(), "a token that names no execution");
  FUZZ_CHECK(token->scheduled_event_id() > 0 || token->query_id() != 0, "a token that names no task");

  auto again = MutableState::decode_token(MutableState::encode_token(*token));
  FUZZ_CHECK(again.is_ok(), "a token does not decode after encoding: %s", again.status().to_string().c_str());
  FUZZ_CHECK(google::protobuf::util::MessageDifferencer::Equals(*token, *again), "the token changed on re-encoding");
  return 0;
}
