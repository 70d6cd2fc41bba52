// Transfer tasks across the shards of two nodes (docs/cluster.md, "Transfer
// tasks across shards"): a child, a signal or cancel request, and a
// parent-close policy whose target is on the other node's shard reach it,
// exactly once, also when the source's node is killed between the remote
// apply and its own record. Workers here are raw gRPC pollers that script
// each workflow type by what its history holds.
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <atomic>
#include <thread>

#include "cluster_harness.hpp"

namespace reprise {
namespace {

using namespace cluster_testing;
using namespace std::chrono_literals;

// What every test here waits at most for a transfer's effect: a few
// retries' worth; without the remote path it never comes.
constexpr auto kTransferDeadline = 15s;

// Two nodes with the shards split between them.
struct TwoNodes {
  explicit TwoNodes(const std::string& url) : db(url) {
    a = cluster_node(url, "a", "1s");
    b = cluster_node(url, "b", "1s");
    split =
        wait_for(
            [&] {
              return db.shards_of("a") > 0 && db.shards_of("b") > 0 && db.shards_of("a") + db.shards_of("b") == kShards;
            },
            10s)
            .has_value();
  }
  ClusterDb db;
  std::unique_ptr<Server> a, b;
  bool split = false;
};

// The first id `prefix`N whose shard `node` holds now.
std::string transfer_id_on(ClusterDb& db, const std::string& prefix, const std::string& node) {
  for (int i = 0; i < 1000; ++i) {
    const std::string id = prefix + std::to_string(i);
    if (db.owner_of(id) == node) return id;
  }
  ADD_FAILURE() << "no id of " << prefix << " on " << node;
  return prefix;
}

v1::Payloads transfer_args(std::vector<std::string> args) {
  v1::Payloads p;
  for (auto& a : args) p.add_payloads()->set_data(a);
  return p;
}

v1::StartWorkflowRequest transfer_start(const std::string& id, const std::string& type, std::vector<std::string> args) {
  v1::StartWorkflowRequest r = start_request(id);
  r.mutable_workflow_type()->set_name(type);
  *r.mutable_input() = transfer_args(std::move(args));
  // A workflow task lost with a killed node comes back after 2 s, not 10.
  r.mutable_workflow_task_timeout()->set_seconds(2);
  return r;
}

// Starts `request` through `node`; a shard that moves meanwhile is
// refused UNAVAILABLE, and the start is sent again (same request id).
bool start_through(Stub& node, const v1::StartWorkflowRequest& request) {
  v1::StartWorkflowResponse out;
  return wait_for([&] { return call(node, &Stub::StartWorkflow, request, &out).ok(); }, 5s).has_value();
}

bool has_event(const v1::History& h, v1::EventType type) {
  for (const auto& e : h.events()) {
    if (e.event_type() == type) return true;
  }
  return false;
}

// The commands a workflow task gets, by workflow type:
//   parent(child_id, child_type, policy): starts the child; completes with
//     the child's result, or (child_type "sleeper") once the child started.
//   child: completes with "result of ID".
//   sleeper, receiver: never complete.
//   sender(target, what): signals "ping" and/or asks to cancel `target`
//     (what: signal, cancel, both); completes once each has an outcome.
std::vector<v1::Command> transfer_script(const v1::PollWorkflowTaskResponse& task) {
  const v1::History& h = task.history();
  const auto& in = h.events(0).workflow_execution_started().input();
  const std::string type = task.workflow_type().name();
  auto arg = [&](int i) { return i < in.payloads_size() ? in.payloads(i).data() : std::string(); };
  std::vector<v1::Command> out;
  if (type == "child") {
    out.push_back(finish("result of " + task.workflow_execution().workflow_id()));
  } else if (type == "parent") {
    if (!has_event(h, v1::EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED)) {
      v1::Command c;
      c.set_command_type(v1::COMMAND_TYPE_START_CHILD_WORKFLOW_EXECUTION);
      auto* a = c.mutable_start_child_workflow_execution();
      a->set_workflow_id(arg(0));
      a->mutable_workflow_type()->set_name(arg(1));
      a->mutable_task_queue()->set_name("q");
      a->set_parent_close_policy(static_cast<v1::ParentClosePolicy>(std::stoi(arg(2))));
      out.push_back(c);
    }
    for (const auto& e : h.events()) {
      if (e.has_child_workflow_execution_completed()) {
        out.push_back(finish(e.child_workflow_execution_completed().result().payloads(0).data()));
      } else if (e.has_start_child_workflow_execution_failed()) {
        out.push_back(finish("the child did not start"));
      } else if (e.has_child_workflow_execution_started() && arg(1) == "sleeper") {
        out.push_back(finish("parent done"));
      }
    }
  } else if (type == "sender") {
    const std::string what = arg(1);
    if (!has_event(h, v1::EVENT_TYPE_WORKFLOW_TASK_COMPLETED)) {
      if (what != "cancel") {
        v1::Command c;
        c.set_command_type(v1::COMMAND_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION);
        c.mutable_signal_external_workflow_execution()->mutable_execution()->set_workflow_id(arg(0));
        c.mutable_signal_external_workflow_execution()->set_signal_name("ping");
        out.push_back(c);
      }
      if (what != "signal") {
        v1::Command c;
        c.set_command_type(v1::COMMAND_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION);
        c.mutable_request_cancel_external_workflow_execution()->mutable_execution()->set_workflow_id(arg(0));
        out.push_back(c);
      }
    } else {
      const bool signal_done = what == "cancel" || has_event(h, v1::EVENT_TYPE_EXTERNAL_WORKFLOW_EXECUTION_SIGNALED) ||
                               has_event(h, v1::EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_FAILED);
      const bool cancel_done = what == "signal" ||
                               has_event(h, v1::EVENT_TYPE_EXTERNAL_WORKFLOW_EXECUTION_CANCEL_REQUESTED) ||
                               has_event(h, v1::EVENT_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_FAILED);
      if (signal_done && cancel_done) out.push_back(finish("sent"));
    }
  }
  return out;
}

// Polls workflow tasks through `stub` (fanned out to every node) and
// answers them by transfer_script() until `stop`.
void run_transfer_worker(Stub& stub, const std::atomic<bool>& stop) {
  while (!stop) {
    v1::PollWorkflowTaskRequest r;
    r.mutable_task_queue()->set_name("q");
    v1::PollWorkflowTaskResponse task;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + 2s);
    if (!stub.PollWorkflowTask(&context, r, &task).ok()) {
      std::this_thread::sleep_for(100ms);  // a node that is gone
      continue;
    }
    if (task.task_token().empty()) continue;
    (void)complete(stub, task.task_token(), transfer_script(task));
  }
}

struct TransferWorker {
  TransferWorker(Stub& stub) : thread([this, &stub] { run_transfer_worker(stub, stop); }) {}
  ~TransferWorker() {
    stop = true;
    thread.join();
  }
  std::atomic<bool> stop{false};
  std::thread thread;
};

v1::WorkflowExecutionStatus status_of(Stub& stub, const std::string& id) {
  grpc::Status s;
  v1::DescribeWorkflowResponse d = describe(stub, id, &s);
  return s.ok() ? d.info().status() : v1::WORKFLOW_EXECUTION_STATUS_UNSPECIFIED;
}

std::string result_of(Stub& stub, const std::string& id) {
  const v1::GetHistoryResponse history = history_of(stub, id);
  for (const auto& e : history.history().events()) {
    if (e.has_workflow_execution_completed()) return e.workflow_execution_completed().result().payloads(0).data();
  }
  return "";
}

int signals_named(const v1::GetHistoryResponse& history, const std::string& name) {
  int n = 0;
  for (const auto& e : history.history().events()) {
    n += e.has_workflow_execution_signaled() && e.workflow_execution_signaled().signal_name() == name ? 1 : 0;
  }
  return n;
}

int64_t runs_of(ClusterDb& db, const std::string& id) {
  return db.count("SELECT count(*) FROM executions WHERE workflow_id = $1", PgParams().add_text(id));
}

// A parent on one node whose child lands on the other's shard completes
// with the child's result, both ways round; one child run each.
TEST(ClusterTransfer, AParentWhoseChildIsOnTheOtherNodeCompletesWithTheChildsResult) {
  REPRISE_POSTGRES_DATABASE(url);
  TwoNodes nodes(url);
  ASSERT_TRUE(nodes.split);
  TransferWorker worker(nodes.a->stub());
  const std::string policy = std::to_string(v1::PARENT_CLOSE_POLICY_TERMINATE);
  const std::vector<std::pair<std::string, std::string>> pairs{
      {transfer_id_on(nodes.db, "parent-a-", "a"), transfer_id_on(nodes.db, "child-b-", "b")},
      {transfer_id_on(nodes.db, "parent-b-", "b"), transfer_id_on(nodes.db, "child-a-", "a")}};
  for (const auto& [parent, child] : pairs) {
    ASSERT_TRUE(start_through(nodes.a->stub(), transfer_start(parent, "parent", {child, "child", policy})));
  }
  for (const auto& [parent, child] : pairs) {
    const auto took =
        wait_for([&] { return status_of(nodes.a->stub(), parent) == v1::WORKFLOW_EXECUTION_STATUS_COMPLETED; },
                 kTransferDeadline);
    ASSERT_TRUE(took) << parent << " (on " << nodes.db.owner_of(parent) << ") did not complete within 15 s: its child "
                      << child << " is on " << nodes.db.owner_of(child)
                      << "'s shard, and the start or the close did not cross";
    std::cout << parent << " completed with its child on the other node in " << took->count() << " ms\n";
    EXPECT_EQ(result_of(nodes.a->stub(), parent), "result of " + child);
    EXPECT_EQ(runs_of(nodes.db, child), 1) << child;
    const v1::GetHistoryResponse h = history_of(nodes.b->stub(), parent);
    EXPECT_EQ(count_events(h, v1::EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED), 1) << parent;
    EXPECT_EQ(count_events(h, v1::EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED), 1) << parent;
  }
}

// A signal and a cancel request to a workflow on the other node arrive
// once each; one to a workflow that does not exist there fails NOT_FOUND
// in the sender's history.
TEST(ClusterTransfer, ASignalAndACancelToAWorkflowOnTheOtherNodeArriveOnce) {
  REPRISE_POSTGRES_DATABASE(url);
  TwoNodes nodes(url);
  ASSERT_TRUE(nodes.split);
  TransferWorker worker(nodes.b->stub());
  const std::string receiver = transfer_id_on(nodes.db, "receiver-b-", "b");
  const std::string sender = transfer_id_on(nodes.db, "sender-a-", "a");
  const std::string nobody = transfer_id_on(nodes.db, "nobody-b-", "b");
  const std::string lonely = transfer_id_on(nodes.db, "lonely-a-", "a");
  ASSERT_TRUE(start_through(nodes.b->stub(), transfer_start(receiver, "receiver", {})));
  ASSERT_TRUE(start_through(nodes.a->stub(), transfer_start(sender, "sender", {receiver, "both"})));
  ASSERT_TRUE(start_through(nodes.a->stub(), transfer_start(lonely, "sender", {nobody, "signal"})));
  for (const std::string& id : {sender, lonely}) {
    ASSERT_TRUE(wait_for([&] { return status_of(nodes.a->stub(), id) == v1::WORKFLOW_EXECUTION_STATUS_COMPLETED; },
                         kTransferDeadline))
        << id << " on a never had the outcome of its request to a workflow on b's shard within 15 s";
  }
  const v1::GetHistoryResponse received = history_of(nodes.a->stub(), receiver);
  EXPECT_EQ(signals_named(received, "ping"), 1) << "the signal arrives once";
  EXPECT_EQ(count_events(received, v1::EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED), 1)
      << "the cancel request arrives once";
  const v1::GetHistoryResponse sent = history_of(nodes.a->stub(), sender);
  EXPECT_EQ(count_events(sent, v1::EVENT_TYPE_EXTERNAL_WORKFLOW_EXECUTION_SIGNALED), 1);
  EXPECT_EQ(count_events(sent, v1::EVENT_TYPE_EXTERNAL_WORKFLOW_EXECUTION_CANCEL_REQUESTED), 1);
  bool not_found = false;
  const v1::GetHistoryResponse lonely_history = history_of(nodes.a->stub(), lonely);
  for (const auto& e : lonely_history.history().events()) {
    not_found |= e.has_signal_external_workflow_execution_failed() &&
                 e.signal_external_workflow_execution_failed().cause() == v1::EXTERNAL_FAILURE_CAUSE_NOT_FOUND;
  }
  EXPECT_TRUE(not_found) << "a signal to a workflow that does not exist fails NOT_FOUND";
}

// A parent that closes applies its children's parent-close policies on the
// other node: TERMINATE ends one child, REQUEST_CANCEL asks the other.
TEST(ClusterTransfer, AParentClosePolicyReachesAChildOnTheOtherNode) {
  REPRISE_POSTGRES_DATABASE(url);
  TwoNodes nodes(url);
  ASSERT_TRUE(nodes.split);
  TransferWorker worker(nodes.a->stub());
  const std::string terminated_parent = transfer_id_on(nodes.db, "closing-a-", "a");
  const std::string terminated_child = transfer_id_on(nodes.db, "terminated-b-", "b");
  const std::string canceling_parent = transfer_id_on(nodes.db, "closing-b-", "b");
  const std::string canceled_child = transfer_id_on(nodes.db, "canceled-a-", "a");
  ASSERT_TRUE(start_through(nodes.a->stub(), transfer_start(terminated_parent, "parent",
                                                            {terminated_child, "sleeper",
                                                             std::to_string(v1::PARENT_CLOSE_POLICY_TERMINATE)})));
  ASSERT_TRUE(start_through(nodes.a->stub(), transfer_start(canceling_parent, "parent",
                                                            {canceled_child, "sleeper",
                                                             std::to_string(v1::PARENT_CLOSE_POLICY_REQUEST_CANCEL)})));
  EXPECT_TRUE(
      wait_for([&] { return status_of(nodes.a->stub(), terminated_child) == v1::WORKFLOW_EXECUTION_STATUS_TERMINATED; },
               kTransferDeadline))
      << terminated_child << " on b was not terminated within 15 s after its parent on a closed (parent: "
      << v1::WorkflowExecutionStatus_Name(status_of(nodes.a->stub(), terminated_parent)) << ")";
  EXPECT_TRUE(wait_for(
      [&] {
        // Not started yet is not a failure: it is looked at again.
        v1::GetHistoryRequest r;
        r.mutable_workflow_execution()->set_workflow_id(canceled_child);
        v1::GetHistoryResponse h;
        return call(nodes.a->stub(), &Stub::GetHistory, r, &h).ok() &&
               count_events(h, v1::EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED) == 1;
      },
      kTransferDeadline))
      << canceled_child << " on a was not asked to cancel within 15 s after its parent on b closed (parent: "
      << v1::WorkflowExecutionStatus_Name(status_of(nodes.a->stub(), canceling_parent)) << ")";
}

// Whether `node` has died of SIGKILL (its fault point) within a few seconds.
bool killed_by_its_fault_point(Server& node) {
  int status = 0;
  const bool exited = wait_for([&] { return ::waitpid(node.pid(), &status, WNOHANG) == node.pid(); }, 5s).has_value();
  return exited && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
}

// Node a is killed (its own fault point, REPRISE_FAULT_KILL_AFTER_REMOTE_TRANSFER)
// right after b has applied a's transfer and before a records it; a comes
// back, and the retried transfer finds what the first attempt did: one
// child run, recorded as the parent's child; one signal.
TEST(ClusterTransfer, AKillBetweenTheRemoteApplyAndItsRecordDoublesNothing) {
  REPRISE_POSTGRES_DATABASE(url);
  ClusterDb db(url);
  auto b = cluster_node(url, "b", "1s");
  auto start_a = [&](bool faulty) {
    if (faulty) ::setenv("REPRISE_FAULT_KILL_AFTER_REMOTE_TRANSFER", "1", 1);
    auto a = cluster_node(url, "a", "1s");
    ::unsetenv("REPRISE_FAULT_KILL_AFTER_REMOTE_TRANSFER");
    return a;
  };
  auto a = start_a(true);
  ASSERT_TRUE(wait_for(
      [&] {
        return db.shards_of("a") > 0 && db.shards_of("b") > 0 && db.shards_of("a") + db.shards_of("b") == kShards;
      },
      10s));
  TransferWorker worker(b->stub());
  const std::string parent = transfer_id_on(db, "parent-a-", "a");
  const std::string child = transfer_id_on(db, "child-b-", "b");
  const std::string receiver = transfer_id_on(db, "receiver-b-", "b");
  const std::string sender = transfer_id_on(db, "sender-a-", "a");

  // The child: b starts it, a dies before recording the start.
  ASSERT_TRUE(start_through(
      b->stub(),
      transfer_start(parent, "parent", {child, "child", std::to_string(v1::PARENT_CLOSE_POLICY_TERMINATE)})));
  ASSERT_TRUE(wait_for([&] { return runs_of(db, child) > 0; }, kTransferDeadline)) << "the child never started on b";
  ASSERT_TRUE(killed_by_its_fault_point(*a)) << "a was not killed after b started the child";
  a = start_a(true);  // and again for the signal below
  ASSERT_TRUE(wait_for([&] { return status_of(b->stub(), parent) == v1::WORKFLOW_EXECUTION_STATUS_COMPLETED; },
                       kTransferDeadline))
      << parent << " did not complete after its node came back";
  EXPECT_EQ(result_of(b->stub(), parent), "result of " + child);
  EXPECT_EQ(runs_of(db, child), 1) << "the retried start found the child the first attempt started";

  // The signal: b records it, a dies before recording the outcome.
  ASSERT_TRUE(start_through(b->stub(), transfer_start(receiver, "receiver", {})));
  ASSERT_TRUE(start_through(b->stub(), transfer_start(sender, "sender", {receiver, "signal"})));
  ASSERT_TRUE(wait_for([&] { return signals_named(history_of(b->stub(), receiver), "ping") > 0; }, kTransferDeadline))
      << "the signal never reached " << receiver;
  ASSERT_TRUE(killed_by_its_fault_point(*a)) << "a was not killed after b recorded the signal";
  a = start_a(false);
  ASSERT_TRUE(wait_for([&] { return status_of(b->stub(), sender) == v1::WORKFLOW_EXECUTION_STATUS_COMPLETED; },
                       kTransferDeadline))
      << sender << " did not record its signal's outcome after its node came back";
  EXPECT_EQ(signals_named(history_of(b->stub(), receiver), "ping"), 1) << "the retried signal was recorded once";
  EXPECT_EQ(count_events(history_of(b->stub(), sender), v1::EVENT_TYPE_EXTERNAL_WORKFLOW_EXECUTION_SIGNALED), 1);
}

}  // namespace
}  // namespace reprise
