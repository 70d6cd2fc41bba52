// Transfer tasks that cannot succeed: a child the server refuses to create
// resolves the parent's command as failed; one that fails for a passing
// reason is retried ever less often, not every 200 ms forever; one whose row
// does not parse is dropped and logged.
#include "../captured_stderr.hpp"
#include "gated_store.hpp"

namespace reprise::engine {
namespace {

class TransferTest : public GatedEngineTest {
 public:
  static v1::Command start_child(const std::string& id, const std::string& type) {
    v1::Command c;
    c.set_command_type(v1::COMMAND_TYPE_START_CHILD_WORKFLOW_EXECUTION);
    c.mutable_start_child_workflow_execution()->set_workflow_id(id);
    c.mutable_start_child_workflow_execution()->mutable_workflow_type()->set_name(type);
    return c;
  }
};

TEST_F(TransferTest, AChildCommandTheServerCouldNotStartFailsItsWorkflowTask) {
  restart([](EngineOptions& o) { o.config.max_id_length = 64; });
  ASSERT_TRUE(start("parent").is_ok());
  Status s = complete(poll_workflow().task_token(), {start_child("kid", std::string(100, 't'))});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "command 0 (START_CHILD_WORKFLOW_EXECUTION): workflow_type.name is longer than 64 bytes");
}

TEST_F(TransferTest, AChildTheServerRefusesAtStartResolvesTheParentsCommandAsFailed) {
  // Recorded under a larger limit; the limit shrinks before the child starts.
  gate_->fail_current_run_of("kid");
  ASSERT_TRUE(start("parent").is_ok());
  ASSERT_TRUE(complete(poll_workflow().task_token(), {start_child("kid", std::string(100, 't'))}).is_ok());
  restart([](EngineOptions& o) { o.config.max_id_length = 64; });
  gate_->fail_current_run_of("");
  auto task = poll_workflow();
  ASSERT_FALSE(task.task_token().empty()) << "the parent was never told";
  const auto& last = *(task.history().events().rbegin() + 2);
  ASSERT_TRUE(last.has_start_child_workflow_execution_failed()) << last.DebugString();
  EXPECT_EQ(last.start_child_workflow_execution_failed().cause(), v1::EXTERNAL_FAILURE_CAUSE_REFUSED);
}

TEST_F(TransferTest, ATransferThatKeepsFailingIsRetriedLessAndLessOften) {
  gate_->fail_current_run_of("kid");
  ASSERT_TRUE(start("parent").is_ok());
  ASSERT_TRUE(complete(poll_workflow().task_token(), {start_child("kid", "hello")}).is_ok());
  std::this_thread::sleep_for(3s);
  // 200 ms doubling: tries at 0, 0.2, 0.6, 1.4 and 3.0 s; a fixed 200 ms
  // pause would have tried about 15 times.
  EXPECT_LE(gate_->failed_reads(), 6);
  EXPECT_GE(gate_->failed_reads(), 3);
  gate_->fail_current_run_of("");
}

// A transfer row whose payload does not parse (a damaged row) can never be
// carried out: it is dropped, and logged as an error naming the row and its
// execution (docs/engine.md, Logs).
TEST_F(TransferTest, ATransferTaskThatDoesNotParseIsDroppedAndLogged) {
  auto started = start("sender");
  ASSERT_TRUE(started.is_ok()) << started.status().to_string();
  engine_.reset();
  const ExecutionKey sender{"default", "sender", started->run_id()};
  TaskRecord damaged;
  damaged.kind = TaskKind::kTransfer;
  damaged.execution = sender;
  damaged.payload = "not a transfer task";
  Transition t;
  t.add_tasks.push_back(damaged);
  ASSERT_TRUE(store_->commit(std::move(t)).is_ok());
  auto transfer_rows = [this]() -> int {
    auto tasks = store_->load_tasks(0, 100);
    if (!tasks.is_ok()) {
      ADD_FAILURE() << tasks.status().to_string();
      return -1;
    }
    int rows = 0;
    for (const TaskRecord& task : *tasks) rows += task.kind == TaskKind::kTransfer ? 1 : 0;
    return rows;
  };
  ASSERT_EQ(transfer_rows(), 1);

  log::set_format(log::Format::kLogfmt);
  const std::string logged = ::reprise::testing::captured_stderr_of([&] {
    restart();  // loads the row and runs it
    for (int i = 0; i < 500 && transfer_rows() > 0; ++i) std::this_thread::sleep_for(10ms);
  });
  EXPECT_EQ(transfer_rows(), 0) << "the row was not dropped";
  const size_t line = logged.find("level=error msg=\"dropping a transfer task whose payload does not parse\" task_id=");
  ASSERT_NE(line, std::string::npos) << logged;
  EXPECT_NE(logged.find("execution=" + sender.to_string(), line), std::string::npos) << logged;
}

}  // namespace
}  // namespace reprise::engine
