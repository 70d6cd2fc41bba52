#include "worker/task_history.hpp"

#include <chrono>

#include "reprise/errors.hpp"

namespace reprise::worker {

namespace {

constexpr auto kPageTimeout = std::chrono::seconds(30);

}  // namespace

TaskHistory::TaskHistory(Connection& connection, const v1::PollWorkflowTaskResponse& task, int64_t first_event_id,
                         int page_events)
    : connection_(connection),
      task_(task),
      page_events_(page_events),
      next_event_id_(first_event_id),
      task_first_event_id_(task.history().events_size() > 0 ? task.history().events(0).event_id() : first_event_id) {}

std::optional<v1::History> TaskHistory::next() {
  while (ready_events() == 0 && read_page()) {
  }
  const int ready = ready_events();
  if (ready == 0) return std::nullopt;
  v1::History chunk;
  if (ready == carry_.events_size()) {
    chunk.Swap(&carry_);
    return chunk;
  }
  chunk.mutable_events()->Reserve(ready);
  for (int i = 0; i < ready; ++i) *chunk.add_events() = std::move(*carry_.mutable_events(i));
  carry_.mutable_events()->DeleteSubrange(0, ready);
  return chunk;
}

ApplyResult TaskHistory::apply(const std::function<ApplyResult(const v1::History&)>& apply_chunk) {
  ApplyResult last = Activation{};
  while (std::optional<v1::History> chunk = next()) {
    last = apply_chunk(*chunk);
    if (!last) break;
  }
  return last;
}

bool TaskHistory::read_page() {
  v1::GetHistoryRequest r;
  *r.mutable_workflow_execution() = task_.workflow_execution();
  r.set_maximum_page_size(page_events_);
  if (next_event_id_ < task_first_event_id_) {
    // Before the task's own events (a sticky task whose workflow is not here).
    r.set_first_event_id(next_event_id_);
    v1::GetHistoryResponse page = connection_.get_history(r, kPageTimeout);
    const int64_t before = next_event_id_;
    for (auto& e : *page.mutable_history()->mutable_events()) {
      if (e.event_id() != next_event_id_ || e.event_id() >= task_first_event_id_) continue;
      ++next_event_id_;
      *carry_.add_events() = std::move(e);
    }
    if (next_event_id_ == before) {
      throw Error("the history of workflow " + task_.workflow_execution().workflow_id() + " ends before event " +
                  std::to_string(next_event_id_) + ", but the task goes on from event " +
                  std::to_string(task_first_event_id_));
    }
    return true;
  }
  v1::History events;
  if (!task_page_read_) {
    task_page_read_ = true;
    next_page_token_ = task_.next_page_token();
    events = task_.history();
  } else if (!next_page_token_.empty()) {
    r.set_next_page_token(next_page_token_);
    v1::GetHistoryResponse page = connection_.get_history(r, kPageTimeout);
    next_page_token_ = page.next_page_token();
    events.Swap(page.mutable_history());
  } else {
    return false;
  }
  for (auto& e : *events.mutable_events()) {
    if (e.event_id() < next_event_id_) continue;  // a cached workflow has them
    next_event_id_ = e.event_id() + 1;
    *carry_.add_events() = std::move(e);
  }
  return true;
}

int TaskHistory::ready_events() const {
  const bool more = !task_page_read_ || !next_page_token_.empty();
  if (!more) return carry_.events_size();
  int cut = carry_.events_size() - 1;
  while (cut >= 0 && carry_.events(cut).event_type() != v1::EVENT_TYPE_WORKFLOW_TASK_STARTED) --cut;
  if (cut > 0 && carry_.events(cut - 1).event_type() == v1::EVENT_TYPE_WORKFLOW_TASK_SCHEDULED) --cut;
  return cut > 0 ? cut : 0;
}

}  // namespace reprise::worker
