// Shutdown waits for every piece of work the engine started, including work
// it posted from a pause (a transfer task's retry): nothing runs against a
// destroyed engine.
#include "gated_store.hpp"

namespace reprise::engine {
namespace {

class ShutdownTest : public GatedEngineTest {
 public:
};

TEST_F(ShutdownTest, ATransferRetryInFlightHoldsShutdownUntilItHasRun) {
  // The retry reads the parent's history, which must reach the gate's slow
  // reads: not from the execution cache, which keeps what this engine committed.
  restart([](EngineOptions& o) { o.execution_cache_entries = 0; });
  // The child's start keeps failing on a transient read, so its transfer
  // task is retried after a pause, again and again.
  gate_->fail_current_run_of("kid");
  ASSERT_TRUE(start("parent").is_ok());
  v1::Command child;
  child.set_command_type(v1::COMMAND_TYPE_START_CHILD_WORKFLOW_EXECUTION);
  child.mutable_start_child_workflow_execution()->set_workflow_id("kid");
  child.mutable_start_child_workflow_execution()->mutable_workflow_type()->set_name("hello");
  ASSERT_TRUE(complete(poll_workflow().task_token(), {child}).is_ok());

  // A retry posted by the pause is now running, slowly.
  gate_->slow_history_reads(300ms);
  ASSERT_TRUE(gate_->wait_for_slow_read(5s)) << "the transfer task was not retried";
  engine_->shutdown();
  gate_->mark();
  std::this_thread::sleep_for(700ms);
  EXPECT_EQ(gate_->calls_after_mark(), 0) << "work the engine started ran on after shutdown() returned";
}

}  // namespace
}  // namespace reprise::engine
