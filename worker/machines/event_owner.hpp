// Which machine a history event belongs to — the lookup that replaces a
// switch per kind in the replayer. An event that records a command belongs
// to the next command the code issued (history records them in the order
// they were issued). An outcome belongs to the machine whose command an
// earlier event recorded, named by that event's id (activities, children,
// requests to other workflows) or by its timer id. The rest (the run's
// start, signals, cancel requests, task bookkeeping) belong to the
// workflow itself.
#pragma once

#include <cstdint>
#include <string_view>

#include "reprise/v1/history.pb.h"

namespace reprise::worker {

// Where a machine is found once history recorded its command.
struct MachineKey {
  enum class Index { kNone, kEventId, kTimerId };
  Index index = Index::kNone;
  int64_t event_id = 0;       // kEventId: its scheduled or initiated event
  std::string_view timer_id;  // kTimerId (a view into the event)
};

struct EventOwner {
  // The event records the next command the code issued.
  bool by_command_order = false;
  // Where its machine is indexed (for a recorded command: from now on);
  // kNone with by_command_order false: the workflow's own event.
  MachineKey key;
  // What an outcome names when no machine has its key.
  const char* unknown = "something the workflow code never started";
  // The event closes the run.
  bool closes_run = false;
};

EventOwner owner_of(const v1::HistoryEvent& e);

}  // namespace reprise::worker
