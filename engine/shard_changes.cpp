// What the engine does when its node gains or loses shards of a store
// shared by a cluster (docs/cluster.md). The store's lease thread calls
// these in order. A gained shard's tasks are loaded from the task table
// (the truth: the node that had it may have handed some out, and those rows
// stay until their starts are committed); its timers the timer loop finds
// by itself. A lost shard's queued tasks and held starts are forgotten: the
// new owner loads them from the store, and anything this node still tries
// to write there fails on the shard's range_id.
#include "engine/engine.hpp"
#include "engine/log.hpp"

namespace reprise::engine {

namespace {

std::string shards_in(const ShardSet& shards) { return std::to_string(std::count(shards.begin(), shards.end(), true)); }

}  // namespace

Status Engine::gain_shards(const ShardSet& gained) {
  auto wanted = [this, &gained](const TaskRecord& task) {
    return shards_ == nullptr || in_shards(task.execution, gained);  // a node alone: every task
  };
  if (shards_ != nullptr && std::none_of(gained.begin(), gained.end(), [](bool b) { return b; })) return Status::ok();
  // What this node cached of them comes from before another node had them.
  if (shards_ != nullptr) execution_cache_.drop_if([&](const ExecutionKey& key) { return in_shards(key, gained); });
  Result<int64_t> loaded = reload_tasks(0, wanted);
  if (!loaded) {
    Status s = loaded.status().with_context("rebuilding task queues");
    if (shards_ != nullptr) log::error("tasks of gained shards not loaded", {{"error", s.to_string()}});
    return s;
  }
  if (shards_ != nullptr) {
    log::info("shards gained", {{"shards", shards_in(gained)}, {"tasks", std::to_string(*loaded)}});
    check_timers();  // theirs may be due
  }
  return Status::ok();
}

Result<int64_t> Engine::reload_tasks(int64_t after, const std::function<bool(const TaskRecord&)>& wanted) {
  int64_t loaded = 0;
  std::vector<TaskRecord> for_owners;  // handed to their queues' owners at once, in batches
  while (true) {
    Result<std::vector<TaskRecord>> page = store_.load_tasks(after, 1000);
    if (!page) return page.status();
    if (page->empty()) return loaded;
    for (TaskRecord& task : *page) {
      after = task.task_id;
      if (!wanted(task)) continue;
      ++loaded;
      if (shards_ != nullptr && task.kind != TaskKind::kTransfer) {
        matching_.add(task);
        for_owners.push_back(std::move(task));
      } else {
        dispatch(std::move(task));
      }
    }
    push_to_owners(for_owners);
    for_owners.clear();
  }
}

Status Engine::not_served(const ExecutionKey& key) const {
  const int64_t shard = shards_->shard_of(key);
  return Status::moved(
      "shard " + std::to_string(shard) + " of workflow '" + key.workflow_id +
      "' is not served by this node now (its holder, as this node last saw: " + shards_->owner_of(shard) + ")");
}

std::string Engine::owner_address(std::string namespace_id, const std::string& workflow_id) const {
  if (shards_ == nullptr || !check_namespace(namespace_id).is_ok()) return "";
  return shards_->owner_address(shard_of(namespace_id, workflow_id, shards_->shard_count()));
}

std::string Engine::token_owner_address(const std::string& task_token) const {
  if (shards_ == nullptr) return "";
  Result<internal::TaskToken> token = options_.config.task_tokens->decode(task_token);
  if (!token) return "";  // refused where it is served
  return shards_->owner_address(shard_of(token->namespace_(), token->workflow_id(), shards_->shard_count()));
}

bool Engine::in_shards(const ExecutionKey& key, const ShardSet& shards) const {
  const int64_t shard = shards_->shard_of(key);
  return shard < static_cast<int64_t>(shards.size()) && shards[shard];
}

void Engine::lose_shards(const ShardSet& lost) {
  auto in_lost = [this, &lost](const ExecutionKey& key) { return in_shards(key, lost); };
  execution_cache_.drop_if(in_lost);  // the new owner writes them now
  const size_t tasks = matching_.remove_if([&in_lost](const TaskRecord& task) { return in_lost(task.execution); });
  const size_t held = held_starts_.erase_if(in_lost);
  log::info("shards lost", {{"shards", shards_in(lost)},
                            {"queued_tasks_dropped", std::to_string(tasks)},
                            {"held_starts_dropped", std::to_string(held)}});
}

}  // namespace reprise::engine
