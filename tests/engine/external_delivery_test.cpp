// A signal one workflow sends another is delivered, then recorded in the
// sender's history: two commits. A crash between them makes the engine
// deliver again after restart; the target still records the signal once.
#include "gated_store.hpp"

namespace reprise::engine {
namespace {

class ExternalDeliveryTest : public GatedEngineTest {
 public:
  int signals_in(const std::string& workflow_id) {
    v1::GetHistoryRequest r;
    r.mutable_workflow_execution()->set_workflow_id(workflow_id);
    auto history = call(&Engine::get_history, r);
    EXPECT_TRUE(history.is_ok());
    int n = 0;
    for (const auto& e : history->history().events()) n += e.has_workflow_execution_signaled() ? 1 : 0;
    return n;
  }
};

TEST_F(ExternalDeliveryTest, ADeliveryRepeatedAfterACrashSignalsOnce) {
  ASSERT_TRUE(start("target", "r-target").is_ok());
  ASSERT_TRUE(complete(poll_workflow().task_token(), {}).is_ok());
  ASSERT_TRUE(start("sender", "r-sender").is_ok());
  // Delivery waits (the target's current run cannot be read) until the
  // sender's recording commit is set to be lost.
  gate_->fail_current_run_of("target");
  v1::Command c;
  c.set_command_type(v1::COMMAND_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION);
  c.mutable_signal_external_workflow_execution()->mutable_execution()->set_workflow_id("target");
  c.mutable_signal_external_workflow_execution()->set_signal_name("ping");
  ASSERT_TRUE(complete(poll_workflow().task_token(), {c}).is_ok());
  gate_->hold_next_commit_of("sender");
  gate_->fail_current_run_of("");
  gate_->wait_until_held();
  EXPECT_EQ(signals_in("target"), 1) << "delivered; the sender's record of it is in flight";
  gate_->lose_held_commit();  // the crash
  restart();                  // delivers again from the transfer task's row
  auto sender_recorded = [&] {
    v1::GetHistoryRequest h;
    h.mutable_workflow_execution()->set_workflow_id("sender");
    auto history = call(&Engine::get_history, h);
    for (const auto& e : history->history().events()) {
      if (e.has_external_workflow_execution_signaled()) return true;
    }
    return false;
  };
  for (int i = 0; i < 100 && !sender_recorded(); ++i) std::this_thread::sleep_for(20ms);
  ASSERT_TRUE(sender_recorded());
  EXPECT_EQ(signals_in("target"), 1) << "the repeated delivery signaled again";
}

// A sender that closes before its request went out drops the request: here
// it closes in the task that made it, and the target never hears of it.
TEST_F(ExternalDeliveryTest, ASenderThatClosesFirstDropsItsUndeliveredRequest) {
  ASSERT_TRUE(start("target", "r-target").is_ok());
  ASSERT_TRUE(complete(poll_workflow().task_token(), {}).is_ok());
  ASSERT_TRUE(start("sender", "r-sender").is_ok());
  v1::Command c;
  c.set_command_type(v1::COMMAND_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION);
  c.mutable_signal_external_workflow_execution()->mutable_execution()->set_workflow_id("target");
  c.mutable_signal_external_workflow_execution()->set_signal_name("ping");
  ASSERT_TRUE(complete(poll_workflow().task_token(), {c, complete_with("gone")}).is_ok());
  EXPECT_EQ(wait_for_close("sender").event_type(), v1::EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED);
  // Wait until the sender's transfer task has been carried out (or dropped).
  bool transfer_done = false;
  for (int i = 0; i < 200 && !transfer_done; ++i) {
    auto tasks = store_->load_tasks(0, 1000);
    ASSERT_TRUE(tasks.is_ok());
    transfer_done = true;
    for (const auto& t : *tasks) {
      if (t.kind == TaskKind::kTransfer && t.execution.workflow_id == "sender") transfer_done = false;
    }
    if (!transfer_done) std::this_thread::sleep_for(50ms);
  }
  ASSERT_TRUE(transfer_done) << "the sender's transfer task is still there";
  EXPECT_EQ(signals_in("target"), 0) << "a closed sender's request was delivered";
}

}  // namespace
}  // namespace reprise::engine
