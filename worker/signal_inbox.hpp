// SignalInbox: the signals a workflow has received and its waits for them
// (each a SignalWaitMachine). A value goes to the oldest wait still alive for
// its name, or is buffered, in history order, until the code asks. A wait
// dropped (its last future destroyed) before a value came is forgotten, so it
// cannot swallow the next signal; one dropped while its value is unread gives
// the value back: to the oldest wait still waiting for it, or to the buffer
// at its place in history. None is lost or doubled.
//
// Thread safety: none; the workflow instance's thread only.
#pragma once

#include <list>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "reprise/detail/core.hpp"
#include "worker/machines/command_machine.hpp"
#include "worker/machines/signal_wait_machine.hpp"

namespace reprise::worker {

// Shared, so its waits (which hold it weakly) can give values back.
class SignalInbox : public std::enable_shared_from_this<SignalInbox> {
 public:
  // `futures` makes ready a wait that a given-back value is handed on to;
  // it must outlive the inbox.
  explicit SignalInbox(FutureResolver& futures);

  // A wait for the next value of `name`: already ready when one is buffered.
  std::shared_ptr<detail::Pending> wait(const std::string& name, detail::WorkflowCore* core, bool cancellable);

  // Signal `name`, recorded as event `event_id`: the wait it resolves (ready,
  // with the value), or null when no wait is alive and it was buffered.
  std::shared_ptr<detail::Pending> deliver(const std::string& name, int64_t event_id, v1::Payloads value);

  // The unread value of a dropped wait (signal `name`, event `event_id`):
  // to the oldest wait still waiting for `name`, made ready at once, or
  // back to the buffer.
  void give_back(const std::string& name, int64_t event_id, v1::Payloads value);

  // A wait the code canceled before its value came: forgotten.
  void withdraw(const std::shared_ptr<detail::Pending>& wait);

  // The waits still alive and unanswered, oldest first per name.
  std::vector<std::shared_ptr<detail::Pending>> live_waits() const;

  // Buffered values and registered waits, roughly (see approximate_bytes()).
  size_t approximate_bytes(size_t per_wait) const;

 private:
  FutureResolver& futures_;
  // Values no wait has taken, by name, then by event id (history order).
  std::map<std::string, std::map<int64_t, v1::Payloads>> buffer_;
  // Weak: a wait lives as long as the futures (and any()) that hold it.
  std::map<std::string, std::list<std::weak_ptr<detail::Pending>>> waits_;
};

}  // namespace reprise::worker
