#include "worker/machines/signal_wait_machine.hpp"

#include "worker/signal_inbox.hpp"

namespace reprise::worker {

SignalWaitMachine::SignalWaitMachine(std::string name, bool cancellable, detail::WorkflowCore* core,
                                     std::weak_ptr<SignalInbox> inbox)
    : inbox_(std::move(inbox)) {
  this->kind = Kind::kSignal;
  this->name = std::move(name);
  this->cancellable = cancellable;
  this->core = core;
}

SignalWaitMachine::~SignalWaitMachine() {
  if (value_taken) return;  // read: the code has it
  const std::optional<State> to = next_state(kTable, state_, Input::kDroppedUnread);
  if (!to) return;  // no value to give back
  state_ = *to;
  if (auto inbox = inbox_.lock()) inbox->give_back(name, value_event_id_, std::move(result));
}

bool SignalWaitMachine::receive(int64_t event_id, v1::Payloads& value) {
  const std::optional<State> to = next_state(kTable, state_, Input::kSignaled);
  if (!to) return false;
  state_ = *to;
  value_event_id_ = event_id;
  result = std::move(value);
  return true;
}

void SignalWaitMachine::cancel() {
  if (const std::optional<State> to = next_state(kTable, state_, Input::kCancel)) state_ = *to;
}

}  // namespace reprise::worker
