// CommandMachine: one command the workflow code issued, from the activation
// that issued it to the last event history records for it — the command it
// sends, the events it takes as an explicit {state, event} → state table,
// how it knows its recorded event, and how it resolves or cancels the
// future the code waits on. One kind per file beside this one, as Temporal's
// sdk-core lays out its machines.
//
// The instance keeps machines in two places: in command order until history
// records their command (it must record them in that order), and then by
// the event that recorded them, for the outcome events that name it.
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <optional>

#include "reprise/detail/core.hpp"
#include "reprise/v1/command.pb.h"
#include "reprise/v1/history.pb.h"
#include "worker/apply_result.hpp"

namespace reprise::worker {

// One row of a machine's table: in state `from`, input `on` leads to `to`.
template <typename State, typename Input>
struct Transition {
  State from;
  Input on;
  State to;
};

// The state `table` leads to from `from` on `on`; nullopt when no row says.
template <typename State, typename Input, size_t N>
constexpr std::optional<State> next_state(const std::array<Transition<State, Input>, N>& table, State from, Input on) {
  for (const auto& row : table) {
    if (row.from == from && row.on == on) return row.to;
  }
  return std::nullopt;
}

// How a machine makes its future ready (the instance: it also schedules
// the coroutines that wait on it).
class FutureResolver {
 public:
  virtual ~FutureResolver() = default;
  virtual void resolve(const std::shared_ptr<detail::Pending>& pending) = 0;
};

// What canceling a machine's future does to its command.
enum class CancelEffect {
  kWithdrawCommand,  // its command was never sent: drop it from the answer
  kIssueCommand,     // it now has a cancel command to send (command())
  kNone,             // only the wait ends
};

class CommandMachine {
 public:
  virtual ~CommandMachine() = default;

  // The command to send, and the one history must record next for it.
  const v1::Command& command() const { return command_; }
  // The future the code waits on; null for a command nothing waits on (a
  // marker, the run's close), which is no FutureMachine.
  const std::shared_ptr<detail::Pending>& pending() const { return pending_; }

  // Whether `e` is the event that records command(): same kind, same
  // identity (ids, names, targets; never the values passed).
  virtual bool matches(const v1::HistoryEvent& e) const = 0;
  // Takes `e`, the recorded command or an outcome naming this machine; a
  // divergence (built by nondeterminism.hpp) when its table has no row.
  [[nodiscard]] virtual std::optional<NonDeterminism> apply(const v1::HistoryEvent& e, FutureResolver& futures) = 0;

 protected:
  CommandMachine(v1::Command command, std::shared_ptr<detail::Pending> pending)
      : command_(std::move(command)), pending_(std::move(pending)) {}

  v1::Command command_;
  std::shared_ptr<detail::Pending> pending_;
};

// A command whose outcome the code waits on, and may stop waiting for.
class FutureMachine : public CommandMachine {
 public:
  // Whether an outcome event may still name it (it stays indexed until then).
  virtual bool awaits_outcome() const = 0;
  // The code canceled pending() (not yet ready): resolves it as canceled
  // and says what becomes of the command.
  virtual CancelEffect cancel(FutureResolver& futures) = 0;

 protected:
  FutureMachine(v1::Command command, std::shared_ptr<detail::Pending> pending)
      : CommandMachine(std::move(command), std::move(pending)) {}

  // Resolves pending() as canceled: no event of its own did.
  void resolve_canceled(FutureResolver& futures) {
    pending_->canceled = true;
    futures.resolve(pending_);
  }
};

}  // namespace reprise::worker
