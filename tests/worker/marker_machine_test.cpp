// MarkerMachine and CloseMachine: the commands nothing waits on — their
// tables and the events they match — and the markers replay reads back.
#include "worker/machines/marker_machine.hpp"

#include <gtest/gtest.h>

#include "reprise/codec.hpp"
#include "tests/worker/machine_test_support.hpp"
#include "worker/machines/close_machine.hpp"
#include "worker/machines/nondeterminism.hpp"

namespace reprise::worker {
namespace {

// The markers the engine wrote: side effect 1 with the value "token-1"
// (features_side_effect), side effect 2 (the second marker of
// worker_tasks_steps), patch "add-fee" (features_fee_v2).
v1::HistoryEvent side_effect_1() { return recorded_event("features_side_effect", v1::HistoryEvent::kMarkerRecorded); }
v1::HistoryEvent side_effect_2() { return recorded_event("worker_tasks_steps", v1::HistoryEvent::kMarkerRecorded, 2); }
v1::HistoryEvent patch_add_fee() { return recorded_event("features_fee_v2", v1::HistoryEvent::kMarkerRecorded); }

TEST(MarkerMachineTest, TablesAreFunctions) {
  expect_one_row_per_state_and_input(MarkerMachine::kTable);
  expect_one_row_per_state_and_input(CloseMachine::kTable);
}

TEST(MarkerMachineTest, MatchesItsNameAndIdAndIsRecordedOnce) {
  MarkerMachine marker(marker_command(kSideEffectMarker, "1"));
  EXPECT_EQ(marker.state(), MarkerMachine::State::kCommandCreated);
  EXPECT_TRUE(marker.matches(side_effect_1()));
  EXPECT_FALSE(marker.matches(side_effect_2()));
  EXPECT_FALSE(MarkerMachine(marker_command(kPatchMarker, "1")).matches(side_effect_1())) << "same id, another name";
  EXPECT_FALSE(marker.matches(patch_add_fee()));

  RecordingResolver futures;
  const v1::HistoryEvent e = side_effect_1();
  ASSERT_FALSE(marker.apply(e, futures));
  EXPECT_EQ(marker.state(), MarkerMachine::State::kRecorded);
  EXPECT_FALSE(marker.matches(e));
  std::optional<NonDeterminism> divergence = marker.apply(e, futures);
  ASSERT_TRUE(divergence);
  EXPECT_EQ(divergence->message, nondeterminism::refused(e, "marker 'side_effect'", "recorded").message);
  EXPECT_TRUE(futures.resolved.empty()) << "nothing waits on a marker";
}

TEST(MarkerMachineTest, PatchMarkersAreKnownAsSuch) {
  EXPECT_TRUE(MarkerMachine::is_patch(patch_add_fee()));
  EXPECT_FALSE(MarkerMachine::is_patch(side_effect_1()));
}

TEST(MarkerMachineTest, ReplayReadsBackSideEffectValuesAndPatchIds) {
  v1::History history;
  *history.add_events() = side_effect_1();
  *history.add_events() = patch_add_fee();
  // Hand-built: a marker of a name this SDK never records (a foreign history).
  *history.add_events() = event(7, [](v1::HistoryEvent& e) { e.mutable_marker_recorded()->set_marker_name("other"); });

  RecordedMarkers markers;
  markers.note(history);
  ASSERT_EQ(markers.side_effects.count(1), 1u);
  EXPECT_EQ(markers.side_effects.size(), 1u);
  EXPECT_EQ(from_payload<std::string>(markers.side_effects[1].payloads(0), "a value"), "token-1");
  EXPECT_TRUE(markers.patches.contains("add-fee"));
  EXPECT_EQ(markers.patches.size(), 1u);
}

TEST(CloseMachineTest, EachCloseCommandMatchesOnlyTheEventThatRecordsIt) {
  v1::Command complete;
  complete.set_command_type(v1::COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION);
  complete.mutable_complete_workflow_execution();
  v1::Command again;
  again.set_command_type(v1::COMMAND_TYPE_CONTINUE_AS_NEW_WORKFLOW_EXECUTION);
  again.mutable_continue_as_new_workflow_execution();

  const v1::HistoryEvent completed =
      recorded_event("features_side_effect", v1::HistoryEvent::kWorkflowExecutionCompleted);
  const v1::HistoryEvent continued =
      recorded_event("features_continued", v1::HistoryEvent::kWorkflowExecutionContinuedAsNew);
  CloseMachine close(complete);
  CloseMachine continue_as_new(again);
  EXPECT_TRUE(close.matches(completed));
  EXPECT_FALSE(close.matches(continued));
  EXPECT_TRUE(continue_as_new.matches(continued));
  EXPECT_FALSE(continue_as_new.matches(completed));

  RecordingResolver futures;
  std::optional<NonDeterminism> divergence = close.apply(continued, futures);
  ASSERT_TRUE(divergence);
  EXPECT_EQ(divergence->message, nondeterminism::refused(continued, "the run's close", "command created").message);
  ASSERT_FALSE(close.apply(completed, futures));
  EXPECT_EQ(close.state(), CloseMachine::State::kRecorded);
  EXPECT_FALSE(close.matches(completed)) << "a run closes once";
}

}  // namespace
}  // namespace reprise::worker
