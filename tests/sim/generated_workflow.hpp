// The workflow every simulated workflow runs: an ordinary SDK workflow
// (reprise::Workflow, replayed by the real WorkflowInstance in the
// simulated workers) whose input is the steps the seed generated. Each step
// adds its part to the result, in order: "a<i>" once activity step i has
// succeeded, "t<i>" once timer step i has fired, and for a signal step the
// value of the next "go" signal. The query "progress" answers the parts so
// far. The reference model of the result (simulation.cpp) does not use this
// code.
#pragma once

#include <string>
#include <vector>

#include "reprise/activity.hpp"
#include "reprise/workflow.hpp"

namespace reprise::sim {

enum class StepKind { kActivity, kTimer, kSignal };

struct Step {
  StepKind kind = StepKind::kActivity;
  int fail_times = 0;  // activity: attempts that fail before one succeeds
  int seconds = 0;     // timer
  MSGPACK_DEFINE(kind, fail_times, seconds);
};

// Fails its first `fail_times` attempts; the result names the attempt that
// succeeded ("<activity id>@<attempt>"), so a history shows whose outcome
// was taken.
std::string flaky(ActivityContext& ctx, int fail_times);
inline constexpr Activity<&flaky> flaky_activity{"flaky"};

inline constexpr Signal<std::string> go_signal{"go"};
inline constexpr Query<std::string> progress_query{"progress"};

Workflow<std::string> generated(WorkflowContext& ctx, std::vector<Step> steps);
inline constexpr WorkflowDef<&generated> generated_wf{"generated"};

}  // namespace reprise::sim

MSGPACK_ADD_ENUM(reprise::sim::StepKind);
