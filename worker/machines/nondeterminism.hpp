// Non-determinism: the workflow's code and its recorded history disagree.
// Every message that says so is built here, from one description of a
// command and one of an event, so they read the same wherever the
// divergence is found (matching a command, finding an outcome's owner, a
// machine's table refusing an event).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "reprise/v1/command.pb.h"
#include "reprise/v1/history.pb.h"
#include "worker/apply_result.hpp"

namespace reprise::worker {

// e.g. "ScheduleActivityTask 'charge' (activity id 1)".
std::string describe(const v1::Command& c);
// e.g. "ActivityTaskScheduled 'charge' (activity id 1)".
std::string describe(const v1::HistoryEvent& e);

namespace nondeterminism {

// The code issued `c` and history has no event for it; `where` says where
// history stopped ("(it ends at event 9)", "before workflow task 7").
NonDeterminism unrecorded_command(const v1::Command& c, std::string_view where);
// History records a command at `e` and the code issued none there.
NonDeterminism unissued_event(const v1::HistoryEvent& e);
// History records a command at `e` and the code issued `c` there instead.
NonDeterminism mismatch(const v1::HistoryEvent& e, const v1::Command& c);
// `e` names work no command of the code started; `what` says which, e.g.
// "an activity the workflow code never scheduled".
NonDeterminism unknown_owner(const v1::HistoryEvent& e, std::string_view what);
// `e` names a command of the code (`machine`, e.g. "timer 1") whose state
// (`state`, e.g. "fired") takes no such event.
NonDeterminism refused(const v1::HistoryEvent& e, std::string_view machine, std::string_view state);

}  // namespace nondeterminism
}  // namespace reprise::worker
