#include "engine/matching/matching.hpp"

#include <algorithm>

namespace reprise::engine {

void Matching::add(TaskRecord task) {
  PollCallback handed_to;
  {
    std::lock_guard lock(mu_);
    if (shut_down_ || !queued_task_ids_.insert(task.task_id).second) return;
    auto entry = queues_.try_emplace(QueueKey{task.execution.namespace_id, task.kind, task.queue}).first;
    Queue& q = entry->second;
    while (!q.pollers.empty() && !handed_to) {
      const PollId id = q.pollers.front();
      q.pollers.pop_front();
      auto it = pollers_.find(id);
      if (it == pollers_.end()) continue;
      deadlines_.cancel(it->second.deadline);
      handed_to = std::move(it->second.done);
      pollers_.erase(it);
    }
    if (handed_to) {
      queued_task_ids_.erase(task.task_id);
      drop_if_idle_locked(entry);
    } else {
      q.tasks.push_back(std::move(task));
      return;
    }
  }
  handed_to(std::move(task));
}

Matching::PollId Matching::poll(const QueueKey& key, Deadlines::SteadyTime deadline, PollCallback done, bool pinned) {
  std::optional<TaskRecord> task;
  PollId id = 0;
  {
    std::lock_guard lock(mu_);
    id = next_poll_id_++;
    if (!shut_down_) {
      auto entry = queues_.try_emplace(key).first;
      Queue& q = entry->second;
      if (!q.tasks.empty()) {
        task = std::move(q.tasks.front());
        q.tasks.pop_front();
        queued_task_ids_.erase(task->task_id);
        drop_if_idle_locked(entry);
      } else {
        q.pollers.push_back(id);
        Poller& p = pollers_[id];
        p.key = key;
        p.done = std::move(done);
        p.pinned = pinned;
        p.deadline = deadlines_.schedule(deadline, [this, id] {
          std::optional<PollCallback> expired;
          {
            std::lock_guard inner(mu_);
            expired = take_poller_locked(id);
          }
          if (expired) (*expired)(std::nullopt);
        });
        return id;
      }
    }
  }
  done(std::move(task));  // a task at once, or nothing after shutdown
  return id;
}

bool Matching::remove(const QueueKey& key, int64_t task_id) {
  std::lock_guard lock(mu_);
  if (queued_task_ids_.erase(task_id) == 0) return false;
  auto q = queues_.find(key);
  if (q == queues_.end()) return false;
  auto& tasks = q->second.tasks;
  tasks.erase(std::remove_if(tasks.begin(), tasks.end(), [&](const TaskRecord& t) { return t.task_id == task_id; }),
              tasks.end());
  drop_if_idle_locked(q);
  return true;
}

size_t Matching::remove_if(const std::function<bool(const TaskRecord&)>& pred) {
  std::lock_guard lock(mu_);
  size_t removed = 0;
  for (auto q = queues_.begin(); q != queues_.end();) {
    auto& tasks = q->second.tasks;
    for (auto t = tasks.begin(); t != tasks.end();) {
      if (!pred(*t)) {
        ++t;
        continue;
      }
      queued_task_ids_.erase(t->task_id);
      t = tasks.erase(t);
      ++removed;
    }
    auto next = std::next(q);
    drop_if_idle_locked(q);
    q = next;
  }
  return removed;
}

bool Matching::cancel(PollId id) {
  std::optional<PollCallback> done;
  {
    std::lock_guard lock(mu_);
    auto it = pollers_.find(id);
    if (it == pollers_.end()) return false;
    deadlines_.cancel(it->second.deadline);
    done = take_poller_locked(id);
  }
  (*done)(std::nullopt);
  return true;
}

size_t Matching::end_polls_if(const std::function<bool(const QueueKey&)>& pred) {
  std::vector<PollCallback> ended;
  {
    std::lock_guard lock(mu_);
    std::vector<PollId> picked;
    for (const auto& [id, p] : pollers_) {
      if (!p.pinned && pred(p.key)) picked.push_back(id);
    }
    for (PollId id : picked) {
      deadlines_.cancel(pollers_[id].deadline);
      if (std::optional<PollCallback> done = take_poller_locked(id)) ended.push_back(std::move(*done));
    }
  }
  for (auto& done : ended) done(std::nullopt);
  return ended.size();
}

bool Matching::queued(int64_t task_id) const {
  std::lock_guard lock(mu_);
  return queued_task_ids_.count(task_id) != 0;
}

std::vector<TaskRecord> Matching::queued_if(const std::function<bool(const TaskRecord&)>& pred) const {
  std::lock_guard lock(mu_);
  std::vector<TaskRecord> out;
  for (const auto& [key, queue] : queues_) {
    for (const TaskRecord& t : queue.tasks) {
      if (pred(t)) out.push_back(t);
    }
  }
  return out;
}

void Matching::shutdown() {
  std::vector<PollCallback> parked;
  {
    std::lock_guard lock(mu_);
    shut_down_ = true;
    for (auto& [id, p] : pollers_) {
      deadlines_.cancel(p.deadline);
      parked.push_back(std::move(p.done));
    }
    pollers_.clear();
    queues_.clear();
    queued_task_ids_.clear();
  }
  for (auto& done : parked) done(std::nullopt);
}

size_t Matching::backlog(const QueueKey& key) const {
  std::lock_guard lock(mu_);
  auto it = queues_.find(key);
  return it == queues_.end() ? 0 : it->second.tasks.size();
}

size_t Matching::total_backlog() const {
  std::lock_guard lock(mu_);
  return queued_task_ids_.size();
}

size_t Matching::queue_count() const {
  std::lock_guard lock(mu_);
  return queues_.size();
}

std::vector<QueueLoad> Matching::loads(const std::function<bool(const TaskRecord&)>& counted) const {
  std::lock_guard lock(mu_);
  std::vector<QueueLoad> out;
  out.reserve(queues_.size());
  for (const auto& [key, queue] : queues_) {
    const size_t tasks = counted ? static_cast<size_t>(std::count_if(queue.tasks.begin(), queue.tasks.end(), counted))
                                 : queue.tasks.size();
    out.push_back({key, tasks, queue.pollers.size()});
  }
  return out;
}

void Matching::drop_if_idle_locked(std::map<QueueKey, Queue>::iterator queue) {
  if (queue->second.tasks.empty() && queue->second.pollers.empty()) queues_.erase(queue);
}

std::optional<PollCallback> Matching::take_poller_locked(PollId id) {
  auto it = pollers_.find(id);
  if (it == pollers_.end()) return std::nullopt;
  if (auto queue = queues_.find(it->second.key); queue != queues_.end()) {
    auto& waiting = queue->second.pollers;
    waiting.erase(std::remove(waiting.begin(), waiting.end(), id), waiting.end());
    drop_if_idle_locked(queue);
  }
  PollCallback done = std::move(it->second.done);
  pollers_.erase(it);
  return done;
}

}  // namespace reprise::engine
