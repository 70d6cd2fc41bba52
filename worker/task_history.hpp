// TaskHistory: the history a workflow or query task stands for, read a page
// at a time and handed out in chunks a WorkflowInstance applies one after
// the other, so a replay holds about one page and the workflow's state, not
// the whole history.
//
// A task comes with one page: the first of the full history, or on a sticky
// queue the first of the events after the worker's last task. The rest
// follows through GetHistory with the task's next_page_token; the events
// before a sticky task's (its workflow was evicted) are read from event 1.
//
// An activation needs the events recorded after its WorkflowTaskStarted (its
// completion, the commands it issued, their markers) in the same apply(), so
// every chunk but the last ends just before a workflow task's
// WorkflowTaskScheduled (or WorkflowTaskStarted), and the rest of a page is
// carried into the next chunk.
//
// Thread safety: none; one task's thread.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "reprise/client.hpp"
#include "reprise/v1/service.pb.h"
#include "worker/apply_result.hpp"

namespace reprise::worker {

class TaskHistory {
 public:
  // The events of `task`'s history from `first_event_id` on (1 for a
  // replay from the start), read in pages of `page_events` (0: the
  // server's default). `task` must outlive this.
  TaskHistory(Connection& connection, const v1::PollWorkflowTaskResponse& task, int64_t first_event_id,
              int page_events);

  // The next chunk to apply; nothing once every event was handed out.
  // Throws RpcError when a page cannot be read.
  std::optional<v1::History> next();
  // Gives every chunk to `apply` (an instance's apply() or replay_completed())
  // until one fails: the last result, which holds the activation.
  ApplyResult apply(const std::function<ApplyResult(const v1::History&)>& apply_chunk);

 private:
  // Reads the next page into carry_; false when there is none.
  bool read_page();
  // How many of carry_'s leading events may be applied before more arrive.
  int ready_events() const;

  Connection& connection_;
  const v1::PollWorkflowTaskResponse& task_;
  int page_events_;
  int64_t next_event_id_;  // the first event not yet read
  int64_t task_first_event_id_;
  bool task_page_read_ = false;
  std::string next_page_token_;  // after the task's page: where its history goes on
  v1::History carry_;            // read, not yet handed out
};

}  // namespace reprise::worker
