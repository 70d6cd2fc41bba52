// LocalActivityMachine: an activity the code ran with execute_local, from the
// call to the MarkerRecorded event that records its outcome. No command goes
// out while it runs: the worker runs it inside the workflow task (or, on
// replay, reads its outcome from the marker the task recorded). Once the
// outcome is known the future resolves and the RecordMarker command is
// issued, which history must then record in that place. Also the one home
// of the marker's format: name "local_activity", details "id" (the call's
// sequence number), "type", "attempts" and, when it completed, "result";
// when it failed, the failure in the marker's failure field.
#pragma once

#include <memory>
#include <optional>

#include "worker/machines/command_machine.hpp"
#include "worker/machines/marker_machine.hpp"

namespace reprise::worker {

class LocalActivityRun;  // local_activity_executor.hpp: an execution in flight

// How a local activity ended after its attempts.
struct LocalActivityOutcome {
  v1::Payloads result;
  std::optional<v1::Failure> failure;  // set: it failed (its last attempt's failure is the cause)
  int attempts = 0;
};

class LocalActivityMachine final : public CommandMachine {
 public:
  enum class State {
    kRunning,               // called; no outcome yet
    kMarkerCommandCreated,  // outcome known, future resolved: RecordMarker to send
    kRecorded,              // MarkerRecorded applied
  };
  enum class Input { kOutcome, kMarkerRecorded };

  static constexpr std::array<Transition<State, Input>, 2> kTable = {{
      {State::kRunning, Input::kOutcome, State::kMarkerCommandCreated},
      {State::kMarkerCommandCreated, Input::kMarkerRecorded, State::kRecorded},
  }};

  // `request` holds the activity type, input, timeouts and retry policy.
  LocalActivityMachine(int64_t seq, v1::ScheduleActivityTaskCommandAttributes request,
                       std::shared_ptr<detail::Pending> pending);

  int64_t seq() const { return seq_; }
  const v1::ScheduleActivityTaskCommandAttributes& request() const { return request_; }
  State state() const { return state_; }
  static const char* name(State s);

  // The execution this worker runs for it (null before it starts, and on
  // replay); kept here so a task that ends before it does finds it again.
  const std::shared_ptr<LocalActivityRun>& execution() const { return execution_; }
  void set_execution(std::shared_ptr<LocalActivityRun> run) { execution_ = std::move(run); }

  // The outcome is known: resolves the future and builds the marker command.
  void resolve(const LocalActivityOutcome& outcome, FutureResolver& futures);
  // The outcome a marker of this kind recorded.
  static LocalActivityOutcome recorded_outcome(const v1::MarkerRecordedEventAttributes& marker);

  bool matches(const v1::HistoryEvent& e) const override;
  std::optional<NonDeterminism> apply(const v1::HistoryEvent& e, FutureResolver& futures) override;

 private:
  int64_t seq_;
  v1::ScheduleActivityTaskCommandAttributes request_;
  std::shared_ptr<LocalActivityRun> execution_;
  State state_ = State::kRunning;
};

}  // namespace reprise::worker
