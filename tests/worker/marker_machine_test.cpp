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

v1::HistoryEvent recorded(int64_t id, const v1::Command& c) {
  return event(id, [&](v1::HistoryEvent& e) {
    e.mutable_marker_recorded()->set_marker_name(c.record_marker().marker_name());
    *e.mutable_marker_recorded()->mutable_details() = c.record_marker().details();
  });
}

TEST(MarkerMachineTest, TablesAreFunctions) {
  expect_one_row_per_state_and_input(MarkerMachine::kTable);
  expect_one_row_per_state_and_input(CloseMachine::kTable);
}

TEST(MarkerMachineTest, MatchesItsNameAndIdAndIsRecordedOnce) {
  MarkerMachine marker(marker_command(kSideEffectMarker, "1"));
  EXPECT_EQ(marker.state(), MarkerMachine::State::kCommandCreated);
  EXPECT_TRUE(marker.matches(recorded(5, marker_command(kSideEffectMarker, "1"))));
  EXPECT_FALSE(marker.matches(recorded(5, marker_command(kSideEffectMarker, "2"))));
  EXPECT_FALSE(marker.matches(recorded(5, marker_command(kPatchMarker, "1"))));

  RecordingResolver futures;
  const v1::HistoryEvent e = recorded(5, marker_command(kSideEffectMarker, "1"));
  ASSERT_FALSE(marker.apply(e, futures));
  EXPECT_EQ(marker.state(), MarkerMachine::State::kRecorded);
  EXPECT_FALSE(marker.matches(e));
  std::optional<NonDeterminism> divergence = marker.apply(e, futures);
  ASSERT_TRUE(divergence);
  EXPECT_EQ(divergence->message, nondeterminism::refused(e, "marker 'side_effect'", "recorded").message);
  EXPECT_TRUE(futures.resolved.empty()) << "nothing waits on a marker";
}

TEST(MarkerMachineTest, PatchMarkersAreKnownAsSuch) {
  EXPECT_TRUE(MarkerMachine::is_patch(recorded(5, marker_command(kPatchMarker, "fix-1"))));
  EXPECT_FALSE(MarkerMachine::is_patch(recorded(5, marker_command(kSideEffectMarker, "1"))));
}

TEST(MarkerMachineTest, ReplayReadsBackSideEffectValuesAndPatchIds) {
  v1::Command side_effect = marker_command(kSideEffectMarker, "2");
  *(*side_effect.mutable_record_marker()->mutable_details())["data"].add_payloads() = to_payload(std::string("42"));
  v1::History history;
  *history.add_events() = recorded(5, side_effect);
  *history.add_events() = recorded(6, marker_command(kPatchMarker, "fix-1"));
  *history.add_events() = event(7, [](v1::HistoryEvent& e) { e.mutable_marker_recorded()->set_marker_name("other"); });

  RecordedMarkers markers;
  markers.note(history);
  ASSERT_EQ(markers.side_effects.count(2), 1u);
  EXPECT_EQ(from_payload<std::string>(markers.side_effects[2].payloads(0), "a value"), "42");
  EXPECT_TRUE(markers.patches.contains("fix-1"));
  EXPECT_EQ(markers.patches.size(), 1u);
}

TEST(CloseMachineTest, EachCloseCommandMatchesOnlyTheEventThatRecordsIt) {
  v1::Command complete;
  complete.set_command_type(v1::COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION);
  complete.mutable_complete_workflow_execution();
  v1::Command again;
  again.set_command_type(v1::COMMAND_TYPE_CONTINUE_AS_NEW_WORKFLOW_EXECUTION);
  again.mutable_continue_as_new_workflow_execution();

  const v1::HistoryEvent completed = event(9, [](v1::HistoryEvent& e) { e.mutable_workflow_execution_completed(); });
  const v1::HistoryEvent continued =
      event(9, [](v1::HistoryEvent& e) { e.mutable_workflow_execution_continued_as_new(); });
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
