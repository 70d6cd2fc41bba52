// SignalWaitMachine: one wait of the code for the next value of a signal.
// It issues no command (history records the signal, not the wait), and it is
// the future the code holds, so it knows when the code drops it: a wait
// dropped with its value unread gives the value back to the inbox it came
// from, which hands it on to the next wait or keeps it at its place in
// history, so no signal is lost. SignalInbox (signal_inbox.hpp) keeps the
// waits alive for each name and the values no wait has taken yet.
#pragma once

#include <memory>
#include <string>

#include "reprise/detail/core.hpp"
#include "worker/machines/command_machine.hpp"

namespace reprise::worker {

class SignalInbox;

class SignalWaitMachine final : public detail::Pending {
 public:
  enum class State {
    kWaiting,    // no value yet
    kReceived,   // a value (signaled now, or buffered before): the future is ready
    kCanceled,   // the code stopped waiting before a value came
    kGivenBack,  // dropped with its value unread: the value is back in the inbox
  };
  enum class Input { kSignaled, kCancel, kDroppedUnread };

  static constexpr std::array<Transition<State, Input>, 3> kTable = {{
      {State::kWaiting, Input::kSignaled, State::kReceived},
      {State::kWaiting, Input::kCancel, State::kCanceled},
      {State::kReceived, Input::kDroppedUnread, State::kGivenBack},
  }};

  // A wait for signal `name` whose unread value goes back to `inbox`.
  SignalWaitMachine(std::string name, bool cancellable, detail::WorkflowCore* core, std::weak_ptr<SignalInbox> inbox);
  ~SignalWaitMachine();

  State state() const { return state_; }

  // Takes the value of signal event `event_id`, which resolves the wait
  // (the instance makes it ready); false, leaving the value, when the wait
  // is not waiting.
  bool receive(int64_t event_id, v1::Payloads& value);
  // The code stopped waiting before a value came.
  void cancel();

 private:
  std::weak_ptr<SignalInbox> inbox_;  // gone once the instance is
  int64_t value_event_id_ = 0;        // of the value it holds
  State state_ = State::kWaiting;
};

}  // namespace reprise::worker
