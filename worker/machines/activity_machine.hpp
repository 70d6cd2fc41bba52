// ActivityMachine: an activity the code scheduled, from its
// ScheduleActivityTask command to the outcome history records (completed,
// failed, timed out, canceled). Canceling is try-cancel: the future resolves
// as canceled at once, a RequestCancelActivityTask goes to the server, and
// the activity's late outcome is recognized and changes nothing.
#pragma once

#include <string>

#include "worker/machines/command_machine.hpp"

namespace reprise::worker {

class ActivityMachine final : public FutureMachine {
 public:
  enum class State {
    kScheduleCommandCreated,     // ScheduleActivityTask to send
    kScheduled,                  // ActivityTaskScheduled recorded: waiting for its outcome
    kCompleted,                  // the future resolved with the result
    kFailed,                     // ... with the failure
    kTimedOut,                   // ... with the timeout failure
    kCanceled,                   // resolved as canceled, and nothing more to record
    kCancelCommandCreated,       // the code canceled it: RequestCancelActivityTask to send
    kCancelRecorded,             // ActivityTaskCancelRequested recorded: the late outcome is still to come
    kEndedBeforeCancelRecorded,  // the outcome came first; the cancel request is still to be recorded
    kWithdrawn,                  // canceled before ScheduleActivityTask was sent: no command at all
  };
  enum class Input { kScheduled, kCompleted, kFailed, kTimedOut, kCanceled, kCancelRequested, kCancel };

  static constexpr std::array<Transition<State, Input>, 17> kTable = {{
      {State::kScheduleCommandCreated, Input::kScheduled, State::kScheduled},
      {State::kScheduleCommandCreated, Input::kCancel, State::kWithdrawn},
      {State::kScheduled, Input::kCompleted, State::kCompleted},
      {State::kScheduled, Input::kFailed, State::kFailed},
      {State::kScheduled, Input::kTimedOut, State::kTimedOut},
      {State::kScheduled, Input::kCanceled, State::kCanceled},
      {State::kScheduled, Input::kCancel, State::kCancelCommandCreated},
      {State::kCancelCommandCreated, Input::kCancelRequested, State::kCancelRecorded},
      {State::kCancelCommandCreated, Input::kCompleted, State::kEndedBeforeCancelRecorded},
      {State::kCancelCommandCreated, Input::kFailed, State::kEndedBeforeCancelRecorded},
      {State::kCancelCommandCreated, Input::kTimedOut, State::kEndedBeforeCancelRecorded},
      {State::kCancelCommandCreated, Input::kCanceled, State::kEndedBeforeCancelRecorded},
      {State::kEndedBeforeCancelRecorded, Input::kCancelRequested, State::kCanceled},
      {State::kCancelRecorded, Input::kCompleted, State::kCanceled},
      {State::kCancelRecorded, Input::kFailed, State::kCanceled},
      {State::kCancelRecorded, Input::kTimedOut, State::kCanceled},
      {State::kCancelRecorded, Input::kCanceled, State::kCanceled},
  }};

  // `command` is a ScheduleActivityTask.
  ActivityMachine(v1::Command command, std::shared_ptr<detail::Pending> pending);

  State state() const { return state_; }
  static const char* name(State s);

  bool matches(const v1::HistoryEvent& e) const override;
  std::optional<NonDeterminism> apply(const v1::HistoryEvent& e, FutureResolver& futures) override;
  bool awaits_outcome() const override;
  CancelEffect cancel(FutureResolver& futures) override;

 private:
  std::string activity_id_;
  std::string activity_type_;
  State state_ = State::kScheduleCommandCreated;
};

}  // namespace reprise::worker
