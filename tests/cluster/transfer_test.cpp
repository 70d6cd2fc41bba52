// Transfer tasks across the shards of two nodes (docs/cluster.md, "Transfer
// tasks across shards"): a child, a signal or cancel request, and a
// parent-close policy whose target is on the other node's shard reach it,
// exactly once, also when the source's node is killed between the remote
// apply and its own record, or the parent closes while its child's start is
// in flight; transfers cross over TLS between nodes that serve it, and a
// call without a node's credential is refused. Workers here are raw gRPC
// pollers that script each workflow type by what its history holds.
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <atomic>
#include <fstream>
#include <thread>

#include "cluster_harness.hpp"
#include "engine/execution/task_token_codec.hpp"
#include "engine/store/task_token_keys.hpp"
#include "reprise/internal/cluster.grpc.pb.h"

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
    split = shards_split_between(db, "a", "b");
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

int signals_in(const v1::History& h, const std::string& name) {
  int n = 0;
  for (const auto& e : h.events()) {
    n += e.has_workflow_execution_signaled() && e.workflow_execution_signaled().signal_name() == name ? 1 : 0;
  }
  return n;
}

// The command that starts the child a "parent" or "closer" names in its input.
v1::Command start_child_command(const std::string& child_id, const std::string& child_type, const std::string& policy) {
  v1::Command c;
  c.set_command_type(v1::COMMAND_TYPE_START_CHILD_WORKFLOW_EXECUTION);
  auto* a = c.mutable_start_child_workflow_execution();
  a->set_workflow_id(child_id);
  a->mutable_workflow_type()->set_name(child_type);
  a->mutable_task_queue()->set_name("q");
  a->set_parent_close_policy(static_cast<v1::ParentClosePolicy>(std::stoi(policy)));
  return c;
}

// The commands a workflow task gets, by workflow type:
//   parent(child_id, child_type, policy): starts the child; completes with
//     the child's result, or (child_type "sleeper") once the child started.
//   closer(child_id, child_type, policy): starts the child; completes when
//     signaled "finish", whatever became of the child.
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
  } else if (type == "closer") {
    if (!has_event(h, v1::EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED)) {
      out.push_back(start_child_command(arg(0), arg(1), arg(2)));
    }
    if (signals_in(h, "finish") > 0) out.push_back(finish("closed early"));
  } else if (type == "parent") {
    if (!has_event(h, v1::EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED)) {
      out.push_back(start_child_command(arg(0), arg(1), arg(2)));
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

// The history of `id` read through `stub`, asked again while the node
// answers UNAVAILABLE (retryable), as the SDK's clients do: a node relays
// the read to the node serving the execution, which just after a restart
// can be one it cannot reach yet.
v1::GetHistoryResponse history_once_served(Stub& stub, const std::string& id) {
  v1::GetHistoryRequest h;
  h.mutable_workflow_execution()->set_workflow_id(id);
  v1::GetHistoryResponse out;
  grpc::Status s;
  wait_for(
      [&] {
        out.Clear();
        s = call(stub, &Stub::GetHistory, h, &out);
        return s.error_code() != grpc::StatusCode::UNAVAILABLE;
      },
      kTransferDeadline);
  EXPECT_TRUE(s.ok()) << "GetHistory " << id << ": " << s.error_code() << " " << s.error_message();
  return out;
}

std::string result_of(Stub& stub, const std::string& id) {
  const v1::GetHistoryResponse history = history_once_served(stub, id);
  for (const auto& e : history.history().events()) {
    if (e.has_workflow_execution_completed()) return e.workflow_execution_completed().result().payloads(0).data();
  }
  return "";
}

int signals_named(const v1::GetHistoryResponse& history, const std::string& name) {
  return signals_in(history.history(), name);
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
// child run, recorded as the parent's child; one signal. a comes back
// without the fault point: b answers the retried transfer too, and a that
// kept it would die again (at times before it listens), leaving its shards,
// and the signal's sender picked on them, to b.
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
  ASSERT_TRUE(shards_split_between(db, "a", "b"));
  TransferWorker worker(b->stub());
  const std::string parent = transfer_id_on(db, "parent-a-", "a");
  const std::string child = transfer_id_on(db, "child-b-", "b");

  // The child: b starts it, a dies before recording the start.
  ASSERT_TRUE(start_through(
      b->stub(),
      transfer_start(parent, "parent", {child, "child", std::to_string(v1::PARENT_CLOSE_POLICY_TERMINATE)})));
  ASSERT_TRUE(wait_for([&] { return runs_of(db, child) > 0; }, kTransferDeadline)) << "the child never started on b";
  ASSERT_TRUE(killed_by_its_fault_point(*a)) << "a was not killed after b started the child";
  a = start_a(false);
  ASSERT_TRUE(wait_for([&] { return status_of(b->stub(), parent) == v1::WORKFLOW_EXECUTION_STATUS_COMPLETED; },
                       kTransferDeadline))
      << parent << " did not complete after its node came back";
  EXPECT_EQ(result_of(b->stub(), parent), "result of " + child);
  EXPECT_EQ(runs_of(db, child), 1) << "the retried start found the child the first attempt started";

  // The signal: b records it, a dies before recording the outcome. a runs
  // with the fault point again; the two workflows are picked on the shards
  // as the nodes split them now.
  a->kill9();
  a = start_a(true);
  ASSERT_TRUE(shards_split_between(db, "a", "b"));
  const std::string receiver = transfer_id_on(db, "receiver-b-", "b");
  const std::string sender = transfer_id_on(db, "sender-a-", "a");
  ASSERT_TRUE(start_through(b->stub(), transfer_start(receiver, "receiver", {})));
  ASSERT_TRUE(start_through(b->stub(), transfer_start(sender, "sender", {receiver, "signal"})));
  ASSERT_TRUE(wait_for([&] { return signals_named(history_of(b->stub(), receiver), "ping") > 0; }, kTransferDeadline))
      << "the signal never reached " << receiver;
  ASSERT_TRUE(killed_by_its_fault_point(*a)) << "a was not killed after b recorded the signal";
  a = start_a(false);
  ASSERT_TRUE(wait_for([&] { return status_of(b->stub(), sender) == v1::WORKFLOW_EXECUTION_STATUS_COMPLETED; },
                       kTransferDeadline))
      << sender << " did not record its signal's outcome after its node came back";
  EXPECT_EQ(signals_named(history_once_served(b->stub(), receiver), "ping"), 1)
      << "the retried signal was recorded once";
  EXPECT_EQ(count_events(history_once_served(b->stub(), sender), v1::EVENT_TYPE_EXTERNAL_WORKFLOW_EXECUTION_SIGNALED),
            1);
}

// The ApplyTransfers a node started with its hold fault point
// (REPRISE_FAULT_HOLD_APPLY_TRANSFER=dir) holds now: a line each, the task's
// kind and its source's workflow id.
std::string held_transfers(const engine::testing::TempDir& hold) {
  std::ifstream in(hold.file("held"));
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

grpc::Status terminate_workflow(Stub& stub, const std::string& id) {
  v1::TerminateWorkflowRequest r;
  r.mutable_workflow_execution()->set_workflow_id(id);
  r.set_reason("closed while its child's start is in flight");
  v1::TerminateWorkflowResponse out;
  return call(stub, &Stub::TerminateWorkflow, r, &out);
}

// A parent on a whose child goes to b's shard closes while b holds the
// child's start (its ApplyTransfer received, not yet applied: b's hold
// fault point): one parent completes, the other is terminated, both with
// a TERMINATE policy. When b lets the starts go, each child starts once,
// and the parent's node, finding the parent closed, gives it the policy:
// no child is left running, none started twice.
TEST(ClusterTransfer, AParentThatClosesWhileItsChildsStartIsInFlightGivesThatOneChildItsPolicy) {
  REPRISE_POSTGRES_DATABASE(url);
  engine::testing::TempDir hold;
  ClusterDb db(url);
  auto a = cluster_node(url, "a", "1s");
  ::setenv("REPRISE_FAULT_HOLD_APPLY_TRANSFER", hold.path().c_str(), 1);
  auto b = cluster_node(url, "b", "1s");
  ::unsetenv("REPRISE_FAULT_HOLD_APPLY_TRANSFER");
  ASSERT_TRUE(shards_split_between(db, "a", "b"));
  TransferWorker worker(a->stub());
  const std::string completing = transfer_id_on(db, "completing-a-", "a");
  const std::string terminated = transfer_id_on(db, "terminated-a-", "a");
  const std::string completing_child = transfer_id_on(db, "child-of-completing-b-", "b");
  const std::string terminated_child = transfer_id_on(db, "child-of-terminated-b-", "b");
  const std::string terminate = std::to_string(v1::PARENT_CLOSE_POLICY_TERMINATE);
  ASSERT_TRUE(start_through(a->stub(), transfer_start(completing, "closer", {completing_child, "sleeper", terminate})));
  ASSERT_TRUE(start_through(a->stub(), transfer_start(terminated, "closer", {terminated_child, "sleeper", terminate})));

  // Both starts have reached b, which holds them.
  ASSERT_TRUE(wait_for(
      [&] {
        const std::string held = held_transfers(hold);
        return held.find("KIND_START_CHILD " + completing + "\n") != std::string::npos &&
               held.find("KIND_START_CHILD " + terminated + "\n") != std::string::npos;
      },
      kTransferDeadline))
      << "b did not receive both child starts; it holds: " << held_transfers(hold);
  EXPECT_EQ(runs_of(db, completing_child), 0) << "held, the start has not run";
  EXPECT_EQ(runs_of(db, terminated_child), 0) << "held, the start has not run";

  // The parents close meanwhile.
  v1::SignalWorkflowRequest finish_now;
  finish_now.mutable_workflow_execution()->set_workflow_id(completing);
  finish_now.set_signal_name("finish");
  v1::SignalWorkflowResponse ignored;
  ASSERT_TRUE(call(a->stub(), &Stub::SignalWorkflow, finish_now, &ignored).ok());
  ASSERT_TRUE(terminate_workflow(a->stub(), terminated).ok());
  ASSERT_TRUE(wait_for(
      [&] {
        return status_of(a->stub(), completing) == v1::WORKFLOW_EXECUTION_STATUS_COMPLETED &&
               status_of(a->stub(), terminated) == v1::WORKFLOW_EXECUTION_STATUS_TERMINATED;
      },
      kTransferDeadline))
      << completing << ": " << v1::WorkflowExecutionStatus_Name(status_of(a->stub(), completing)) << ", " << terminated
      << ": " << v1::WorkflowExecutionStatus_Name(status_of(a->stub(), terminated));

  // b lets the starts go: each child starts, then gets its parent's policy.
  std::ofstream(hold.file("release")).flush();
  for (const std::string& child : {completing_child, terminated_child}) {
    const auto took = wait_for([&] { return status_of(a->stub(), child) == v1::WORKFLOW_EXECUTION_STATUS_TERMINATED; },
                               kTransferDeadline);
    EXPECT_TRUE(took) << child << " was started after its parent closed and is "
                      << v1::WorkflowExecutionStatus_Name(status_of(a->stub(), child))
                      << ": the parent's TERMINATE policy never reached it";
    if (took) std::cout << child << " terminated " << took->count() << " ms after its start was let go\n";
  }
  // Retries of the start (the parent's node may have sent it again while b
  // held it) found the one run.
  std::this_thread::sleep_for(500ms);
  for (const std::string& child : {completing_child, terminated_child}) {
    EXPECT_EQ(runs_of(db, child), 1) << child << " started more than once";
  }
}

// Two nodes serving mutual TLS (each checks the other's certificate and
// presents its own) carry transfers to each other's shards: a child's start
// and its close, and a parent-close policy.
TEST(ClusterTransfer, TransfersBetweenNodesThatServeMutualTlsCrossOverTls) {
  REPRISE_POSTGRES_DATABASE(url);
  Certificates c;
  ClusterDb db(url);
  auto a = cluster_node(url, "a", "1s", mutual_tls_node_flags(c));
  auto b = cluster_node(url, "b", "1s", mutual_tls_node_flags(c));
  ASSERT_TRUE(shards_split_between(db, "a", "b"));
  auto to_a = v1::WorkflowService::NewStub(grpc::CreateChannel(a->address(), mutual_tls_worker_credentials(c)));
  TransferWorker worker(*to_a);
  const std::string terminate = std::to_string(v1::PARENT_CLOSE_POLICY_TERMINATE);
  const std::string parent = transfer_id_on(db, "tls-parent-a-", "a");
  const std::string child = transfer_id_on(db, "tls-child-b-", "b");
  const std::string closing = transfer_id_on(db, "tls-closing-b-", "b");
  const std::string sleeper = transfer_id_on(db, "tls-sleeper-a-", "a");
  ASSERT_TRUE(start_through(*to_a, transfer_start(parent, "parent", {child, "child", terminate})));
  ASSERT_TRUE(start_through(*to_a, transfer_start(closing, "parent", {sleeper, "sleeper", terminate})));
  EXPECT_TRUE(
      wait_for([&] { return status_of(*to_a, parent) == v1::WORKFLOW_EXECUTION_STATUS_COMPLETED; }, kTransferDeadline))
      << parent << " on a did not complete with its child on b: the start or the close did not cross over TLS";
  EXPECT_EQ(result_of(*to_a, parent), "result of " + child);
  EXPECT_EQ(runs_of(db, child), 1);
  EXPECT_TRUE(wait_for([&] { return status_of(*to_a, sleeper) == v1::WORKFLOW_EXECUTION_STATUS_TERMINATED; },
                       kTransferDeadline))
      << sleeper << " on a was not terminated after its parent on b closed (parent: "
      << v1::WorkflowExecutionStatus_Name(status_of(*to_a, closing)) << ")";
}

// A caller that is not a node of the cluster calls ApplyTransfer on a node
// that serves mutual TLS, asking it to start a child of a running workflow.
// Without an accepted client certificate the handshake fails (UNAVAILABLE);
// with one, a credential that is missing, damaged or signed with another
// key is UNAUTHENTICATED, and a worker's task token, or a node's credential
// for another execution, PERMISSION_DENIED. None of them changes the
// database. The same call with the node's credential starts the child.
TEST(ClusterTransfer, AnApplyTransferWithoutANodesCredentialIsRefusedAndChangesNothing) {
  REPRISE_POSTGRES_DATABASE(url);
  Certificates c;
  ClusterDb db(url);
  auto a = cluster_node(url, "a", "1s", mutual_tls_node_flags(c));
  ASSERT_TRUE(wait_for([&] { return db.shards_of("a") == kShards; }, 10s));
  auto channel_as = [&](const std::string& client) {
    grpc::SslCredentialsOptions tls;
    tls.pem_root_certs = c.read("ca.pem");
    if (!client.empty()) {
      tls.pem_cert_chain = c.read(client + ".pem");
      tls.pem_private_key = c.read(client + ".key");
    }
    return grpc::CreateChannel(a->address(), grpc::SslCredentials(tls));
  };
  auto as_worker = v1::WorkflowService::NewStub(channel_as("worker"));

  // A running workflow, and a worker's token for its first task.
  v1::StartWorkflowRequest start = start_request("transfer-source");
  start.mutable_workflow_task_timeout()->set_seconds(60);  // its history stays as it is
  v1::StartWorkflowResponse started;
  ASSERT_TRUE(call(*as_worker, &Stub::StartWorkflow, start, &started).ok());
  const v1::PollWorkflowTaskResponse task = next_workflow_task(*as_worker);
  ASSERT_FALSE(task.task_token().empty());
  const std::string source_run = task.workflow_execution().run_id();

  // The cluster's key, as every node reads it from the database.
  auto keys_row = db.connection().query("SELECT value FROM reprise_meta WHERE key = 'task_token_keys'", {});
  ASSERT_TRUE(keys_row && keys_row->rows() == 1);
  auto keys = engine::parse_task_token_keys(keys_row->get_bytes(0, 0), url);
  ASSERT_TRUE(keys) << keys.status().to_string();
  const engine::TaskTokenCodec cluster_key(*keys);
  Result<internal::TaskToken> worker_token = cluster_key.decode(task.task_token());
  ASSERT_TRUE(worker_token) << worker_token.status().to_string();
  internal::TaskToken node_token = *worker_token;  // what the source's node signs
  node_token.set_transfer_credential(true);
  internal::TaskToken elsewhere = node_token;
  elsewhere.set_workflow_id("another-workflow");

  // Start "intruder" as the source's child.
  internal::RemoteTransfer request;
  request.set_namespace_(worker_token->namespace_());
  request.mutable_source()->set_workflow_id("transfer-source");
  request.mutable_source()->set_run_id(source_run);
  request.mutable_task()->set_kind(internal::TransferTask::KIND_START_CHILD);
  request.mutable_task()->set_initiated_event_id(5);
  auto* initiated = request.mutable_event()->mutable_start_child_workflow_execution_initiated();
  initiated->set_workflow_id("intruder");
  initiated->mutable_workflow_type()->set_name("sleeper");
  initiated->mutable_task_queue()->set_name("q");
  request.set_request_id("intruder-start");
  auto apply = [&](const std::shared_ptr<grpc::Channel>& channel, const std::string& credential) {
    internal::RemoteTransfer r = request;
    r.set_credential(credential);
    internal::RemoteTransferOutcome out;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + 10s);
    return internal::ClusterService::NewStub(channel)->ApplyTransfer(&context, r, &out);
  };

  auto database = [&] {
    return std::vector<int64_t>{db.count("SELECT count(*) FROM executions"), db.count("SELECT count(*) FROM history"),
                                db.count("SELECT count(*) FROM tasks"), db.count("SELECT count(*) FROM current_runs")};
  };
  const std::vector<int64_t> before = database();
  const std::string node_credential = cluster_key.encode(node_token);
  struct Refused {
    std::string caller;
    std::string client_certificate;
    std::string credential;
    grpc::StatusCode code;
  };
  const std::vector<Refused> refusals{
      {"no client certificate", "", node_credential, grpc::StatusCode::UNAVAILABLE},
      {"a client certificate of another CA", "stranger", node_credential, grpc::StatusCode::UNAVAILABLE},
      {"no credential", "worker", "", grpc::StatusCode::UNAUTHENTICATED},
      {"a damaged credential", "worker", std::string(80, 'x'), grpc::StatusCode::UNAUTHENTICATED},
      {"a credential signed with another key", "worker", engine::TaskTokenCodec::ephemeral()->encode(node_token),
       grpc::StatusCode::UNAUTHENTICATED},
      {"a worker's task token", "worker", task.task_token(), grpc::StatusCode::PERMISSION_DENIED},
      {"a node's credential for another execution", "worker", cluster_key.encode(elsewhere),
       grpc::StatusCode::PERMISSION_DENIED},
  };
  for (const Refused& r : refusals) {
    const grpc::Status s = apply(channel_as(r.client_certificate), r.credential);
    EXPECT_EQ(s.error_code(), r.code) << r.caller << ": " << s.error_code() << " " << s.error_message();
    std::cout << r.caller << ": " << s.error_code() << " " << s.error_message() << "\n";
  }
  EXPECT_EQ(runs_of(db, "intruder"), 0) << "a refused ApplyTransfer started the child";
  EXPECT_EQ(database(), before) << "rows of executions, history, tasks, current_runs";

  // The node's credential: the same call starts the child.
  const grpc::Status accepted = apply(channel_as("worker"), node_credential);
  EXPECT_TRUE(accepted.ok()) << accepted.error_message();
  EXPECT_EQ(runs_of(db, "intruder"), 1);
}

}  // namespace
}  // namespace reprise
