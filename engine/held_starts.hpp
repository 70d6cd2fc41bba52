// HeldStarts: task hand-outs kept in memory instead of committed.
//
// When a poller takes a task, the transition that starts it (the workflow
// task's WorkflowTaskStarted, an activity attempt's started state, their
// timeout timers, the removal of the task row) is held here rather than
// committed: the run's next transition (normally the task's completion)
// resumes from it and commits it along, so a task costs one durable
// transition instead of two. A held change is committed on its own once its
// earliest timer is due or it has been held for EngineOptions::max_held_start,
// whichever is first (the timer loop does it); until then a crash loses only
// the hand-out: the task row is still stored and the task is handed out
// again, and the token from before carries another start id, so its
// completion is refused (docs/engine.md, "Tasks started in memory").
//
// An activity's result may be held here too, with the workflow task it woke
// started for the worker that reported it (CompleteActivityRequest.
// hold_with_workflow_task): that worker keeps the result until the task's
// answer and reports it again if the answer is lost, so a crash loses
// nothing the engine acknowledged (docs/engine.md, "Activity results held
// with their workflow task").
//
// Thread safety: all methods may be called from any thread. The engine
// changes the entry of an execution only inside that execution's serialized
// transition; the timer loop only marks entries it flushes.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include "engine/execution/mutable_state.hpp"
#include "engine/store/records.hpp"

namespace reprise::engine {

class HeldStarts {
 public:
  struct Entry {
    HeldChange change;
    // The task rows the hand-outs took out of matching: removed when the
    // change is committed, handed back to matching if it is dropped.
    std::vector<TaskRecord> taken;
    TimePoint due;  // when the change must be committed at the latest
    bool flushing = false;
  };

  std::optional<Entry> find(const ExecutionKey& key) const {
    std::lock_guard lock(mu_);
    auto it = entries_.find(key);
    if (it == entries_.end()) return std::nullopt;
    return it->second;
  }
  void put(const ExecutionKey& key, Entry entry) {
    std::lock_guard lock(mu_);
    entries_[key] = std::move(entry);
  }
  void erase(const ExecutionKey& key) {
    std::lock_guard lock(mu_);
    entries_.erase(key);
  }
  // The executions whose change is due by `now` and not being flushed yet;
  // they are marked as being flushed.
  std::vector<ExecutionKey> take_due(TimePoint now) {
    std::vector<ExecutionKey> due;
    std::lock_guard lock(mu_);
    for (auto& [key, entry] : entries_) {
      if (!entry.flushing && entry.due <= now) {
        entry.flushing = true;
        due.push_back(key);
      }
    }
    return due;
  }
  // A flush of `key` ended; if it did not commit the change, it is due again.
  void flush_ended(const ExecutionKey& key) {
    std::lock_guard lock(mu_);
    if (auto it = entries_.find(key); it != entries_.end()) it->second.flushing = false;
  }
  // The earliest due time of the changes not being flushed.
  std::optional<TimePoint> next_due() const {
    std::lock_guard lock(mu_);
    std::optional<TimePoint> next;
    for (const auto& [key, entry] : entries_) {
      if (!entry.flushing && (!next || entry.due < *next)) next = entry.due;
    }
    return next;
  }
  size_t size() const {
    std::lock_guard lock(mu_);
    return entries_.size();
  }
  // Forgets the changes of the executions `pred` picks (their shard moved
  // to another node, which loads its tasks from the store); how many.
  template <typename Pred>
  size_t erase_if(Pred pred) {
    std::lock_guard lock(mu_);
    return std::erase_if(entries_, [&pred](const auto& entry) { return pred(entry.first); });
  }

 private:
  mutable std::mutex mu_;
  std::map<ExecutionKey, Entry> entries_;
};

}  // namespace reprise::engine
