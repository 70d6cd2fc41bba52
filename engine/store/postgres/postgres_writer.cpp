#include "engine/store/postgres/postgres_writer.hpp"

#include <algorithm>
#include <bit>
#include <chrono>
#include <set>

#include "engine/store/shard.hpp"
#include "engine/thread_name.hpp"

namespace reprise::engine {

namespace {

using Step = PgTransitionWriter::Step;
using Check = Step::Check;

// $1..$4: shard, namespace, workflow id, run id — the order of every
// statement about one execution.
PgParams keyed(int64_t shard, const ExecutionKey& k) {
  PgParams p;
  p.add(shard).add_text(k.namespace_id).add_text(k.workflow_id).add_text(k.run_id);
  return p;
}

Status explain_lost_update(PgConnection& db, const ExecutionWrite& w, int64_t shard) {
  Result<PgResult> r = db.query(
      "SELECT version, next_event_id FROM executions "
      "WHERE shard_id = $1 AND namespace = $2 AND workflow_id = $3 AND run_id = $4",
      keyed(shard, w.key));
  if (!r) return r.status();
  if (r->rows() == 0) return Status::not_found("execution " + w.key.to_string() + " does not exist");
  const int64_t version = r->get_int(0, 0);
  const int64_t next_event_id = r->get_int(0, 1);
  if (version != w.expected_version) {
    return Status::aborted("execution " + w.key.to_string() + " is at version " + std::to_string(version) +
                           ", the writer expected " + std::to_string(w.expected_version));
  }
  if (!w.events) return Status::aborted("execution " + w.key.to_string() + " changed during the write");
  return Status::invalid_argument("history batch for " + w.key.to_string() + " starts at event " +
                                  std::to_string(w.events->first_event_id) + " but the next event is " +
                                  std::to_string(next_event_id));
}

std::function<Status(PgConnection&)> fails_with(Status s) {
  return [s](PgConnection&) { return s; };
}

constexpr const char* kExecutionKey = "shard_id = $1 AND namespace = $2 AND workflow_id = $3 AND run_id = $4";

}  // namespace

PgTransitionWriter::PgTransitionWriter(std::unique_ptr<PgConnection> db, int shard_count, int max_batch,
                                       PgCommitShape shape, FaultHook fault_hook, const Clock& clock,
                                       const PgShardLeases* leases, StallReport report)
    : db_(std::move(db)),
      shard_count_(shard_count),
      max_batch_(std::max(1, max_batch)),
      shape_(shape),
      fault_hook_(std::move(fault_hook)),
      clock_(clock),
      leases_(leases),
      stall_(std::move(report)),
      batch_limit_(max_batch_),
      thread_([this] { run(); }) {
  name_thread(thread_, "writer");
}

PgTransitionWriter::~PgTransitionWriter() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void PgTransitionWriter::submit(Transition transition, CommitCallback done) {
  {
    std::lock_guard lock(mu_);
    if (!stopping_) {
      queue_.push_back({std::move(transition), std::move(done)});
      cv_.notify_one();
      return;
    }
  }
  done(Status::unavailable("store is closing"));
}

size_t PgTransitionWriter::queued() const {
  std::lock_guard lock(mu_);
  return queue_.size();
}

std::string PgTransitionWriter::problem() const { return stall_.problem(); }

void PgTransitionWriter::stop_waiting_for_space() {
  {
    std::lock_guard lock(mu_);
    give_up_waiting_ = true;
  }
  cv_.notify_all();
}

bool PgTransitionWriter::narrow(std::deque<Pending>& batch) {
  std::lock_guard lock(mu_);
  if (batch.size() < 2 || stopping_ || give_up_waiting_) return false;
  batch_limit_ = static_cast<int>(give_back_half(batch, queue_));
  return true;
}

bool PgTransitionWriter::wait_for_space(const Status& error) {
  const std::chrono::milliseconds delay = stall_.failed(error);
  // The pages a failed try added to a table stay, full of its rolled-back
  // rows, and PostgreSQL reuses them only once VACUUM has found them free
  // (or gives trailing ones back to the file system): without it, room
  // freed on the disk is used up by the first try that fails, and the
  // single write that would fit waits for autovacuum. It fails while the
  // disk is full, and that is fine.
  (void)db_->exec(
      "VACUUM (SKIP_LOCKED) executions, history, current_runs, tasks, timers, visibility, blob_refs, blobs");
  (void)db_->take_out_of_space();
  std::unique_lock lock(mu_);
  return !cv_.wait_for(lock, delay, [this] { return stopping_ || give_up_waiting_; });
}

int PgTransitionWriter::batch_limit() const {
  // Closing, or told to stop waiting: what meets a full disk fails, and may
  // as well fail in full batches.
  return stopping_ || give_up_waiting_ ? max_batch_ : batch_limit_;
}

WriterStats PgTransitionWriter::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

void PgTransitionWriter::run() {
  std::deque<Pending> batch;
  while (true) {
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return !queue_.empty() || stopping_; });
      if (queue_.empty()) return;  // stopping, and everything queued is done
      while (!queue_.empty() && static_cast<int>(batch.size()) < batch_limit()) {
        batch.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
    }
    commit_batch(batch);
    batch.clear();
  }
}

Result<Step> PgTransitionWriter::fence(int64_t shard) const {
  const int64_t range = leases_->held_range(shard);
  if (range == 0) {
    return Status::moved("shard " + std::to_string(shard) + " is not served by this node (" + leases_->node_id() +
                         "); it is served by " + leases_->owner_of(shard));
  }
  Step step;
  step.sql = "SELECT 1 FROM shards WHERE shard_id = $1 AND owner = $2 AND range_id = $3 FOR UPDATE";
  step.params.add(shard).add_text(leases_->node_id()).add(range);
  step.check = Check::kReturned;
  step.fail = [shard, range](PgConnection& db) {
    // Who holds it now, for the message.
    Result<PgResult> now = db.query("SELECT owner, range_id FROM shards WHERE shard_id = $1", PgParams().add(shard));
    std::string holder = "another node";
    if (now && now->rows() == 1) {
      holder = "node " + now->get_bytes(0, 0) + " (range_id " + std::to_string(now->get_int(0, 1)) + ")";
    }
    return Status::moved("shard " + std::to_string(shard) + " was taken over by " + holder +
                         ": this node's lease on it, range_id " + std::to_string(range) + ", is gone");
  };
  step.fences = shard;
  return step;
}

Status PgTransitionWriter::fence_rows(const std::vector<Step>& steps, const std::vector<int64_t>& captured) {
  for (int64_t shard : captured) {
    const bool fenced =
        std::any_of(steps.begin(), steps.end(), [shard](const Step& step) { return step.fences == shard; });
    if (fenced) continue;
    Result<Step> step = fence(shard);
    if (!step) return step.status();
    Result<PgResult> r = db_->query(step->sql, step->params);
    if (!r) return r.status();
    if (r->rows() == 0) return step->fail(*db_);
  }
  return Status::ok();
}

Result<std::vector<Step>> PgTransitionWriter::plan(const Transition& t) const {
  std::vector<Step> steps;
  auto shard = [this](const ExecutionKey& k) { return shard_of(k.namespace_id, k.workflow_id, shard_count_); };
  // The shards the transition writes, each fenced after its writes.
  std::set<int64_t> shards;
  if (leases_ != nullptr) {
    for (const ExecutionKey& k : t.delete_executions) shards.insert(shard(k));
    for (const ExecutionWrite& w : t.executions) shards.insert(shard(w.key));
    for (const CurrentRunWrite& w : t.current_runs) {
      shards.insert(shard_of(w.run.namespace_id, w.run.workflow_id, shard_count_));
    }
    for (const TaskRecord& task : t.add_tasks) shards.insert(shard(task.execution));
    for (const TimerRecord& timer : t.add_timers) shards.insert(shard(timer.execution));
  }
  // A task or timer removed by id tells its shard, fenced unless one of
  // the above is the same.
  const Step::Capture removed_row = leases_ != nullptr ? Step::Capture::kShard : Step::Capture::kNone;
  auto add = [&steps](std::string sql, PgParams params, Check check = Check::kNone,
                      std::function<Status(PgConnection&)> fail = nullptr) {
    steps.push_back({std::move(sql), std::move(params), check, Step::Capture::kNone, std::move(fail)});
  };

  for (const ExecutionKey& k : t.delete_executions) {
    for (const char* table : {"executions", "history", "timers"}) {
      add(std::string("DELETE FROM ") + table + " WHERE " + kExecutionKey, keyed(shard(k), k));
    }
    // Its transfer rows stay: a run deleted right after it closed still owes
    // others what they carry (its children's parent-close policies).
    PgParams tasks = keyed(shard(k), k);
    tasks.add(static_cast<int64_t>(TaskKind::kTransfer));
    add(std::string("DELETE FROM tasks WHERE ") + kExecutionKey + " AND kind != $5", std::move(tasks));
    PgParams p;
    p.add_text(k.namespace_id).add_text(k.workflow_id).add_text(k.run_id);
    for (const char* table : {"visibility", "blob_refs"}) {
      add(std::string("DELETE FROM ") + table + " WHERE namespace = $1 AND workflow_id = $2 AND run_id = $3", p);
    }
    add(std::string("DELETE FROM current_runs WHERE ") + kExecutionKey, keyed(shard(k), k));
  }

  for (const ExecutionWrite& w : t.executions) {
    if (w.events) {
      const HistoryBatch& b = *w.events;
      if (b.first_event_id < 1 || b.last_event_id < b.first_event_id || b.data.empty()) {
        return Status::invalid_argument("history batch for " + w.key.to_string() + " has a bad range " +
                                        std::to_string(b.first_event_id) + ".." + std::to_string(b.last_event_id));
      }
    }
    const int64_t s = shard(w.key);
    const int64_t next_event_id = w.events ? w.events->last_event_id + 1 : 1;
    if (w.expected_version == 0) {
      if (w.events && w.events->first_event_id != 1) {
        return Status::invalid_argument("history of new execution " + w.key.to_string() + " must start at event 1");
      }
      PgParams p = keyed(s, w.key);
      p.add(next_event_id).add(w.status).add_bytes(w.state);
      add("INSERT INTO executions (shard_id, namespace, workflow_id, run_id, version, next_event_id, status, state) "
          "VALUES ($1, $2, $3, $4, 1, $5, $6, $7) ON CONFLICT DO NOTHING",
          std::move(p), Check::kChanged,
          fails_with(Status::already_exists("execution " + w.key.to_string() + " already exists")));
    } else {
      PgParams p = keyed(s, w.key);
      p.add(w.expected_version);
      if (w.events) {
        p.add(w.events->first_event_id).add(next_event_id);
      } else {
        p.add_null_int().add_null_int();
      }
      p.add(w.status).add_bytes(w.state);
      add(std::string("UPDATE executions SET version = version + 1, next_event_id = coalesce($7, next_event_id), "
                      "status = $8, state = $9 WHERE ") +
              kExecutionKey + " AND version = $5 AND ($6 IS NULL OR next_event_id = $6)",
          std::move(p), Check::kChanged, [w, s](PgConnection& db) { return explain_lost_update(db, w, s); });
    }
    if (w.events) {
      PgParams p = keyed(s, w.key);
      p.add(w.events->last_event_id).add(w.events->first_event_id).add_bytes(w.events->data);
      add("INSERT INTO history (shard_id, namespace, workflow_id, run_id, last_event_id, first_event_id, data) "
          "VALUES ($1, $2, $3, $4, $5, $6, $7)",
          std::move(p));
    }
  }

  for (const CurrentRunWrite& w : t.current_runs) {
    const CurrentRun& r = w.run;
    PgParams p;
    p.add(shard_of(r.namespace_id, r.workflow_id, shard_count_))
        .add_text(r.namespace_id)
        .add_text(r.workflow_id)
        .add_text(r.run_id)
        .add(r.status)
        .add_text(r.start_request_id);
    if (w.expected_run_id.empty()) {
      add("INSERT INTO current_runs (shard_id, namespace, workflow_id, run_id, status, start_request_id) "
          "VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING",
          std::move(p), Check::kChanged,
          fails_with(Status::already_exists("workflow id '" + r.workflow_id + "' already has a current run")));
    } else {
      p.add_text(w.expected_run_id);
      add("UPDATE current_runs SET run_id = $4, status = $5, start_request_id = $6 "
          "WHERE shard_id = $1 AND namespace = $2 AND workflow_id = $3 AND run_id = $7",
          std::move(p), Check::kChanged,
          fails_with(
              Status::aborted("current run of workflow id '" + r.workflow_id + "' is no longer " + w.expected_run_id)));
    }
  }

  for (int64_t id : t.remove_tasks) {
    add("DELETE FROM tasks WHERE task_id = $1 RETURNING shard_id", PgParams().add(id), Check::kReturned,
        fails_with(Status::aborted("task " + std::to_string(id) + " no longer exists")));
    steps.back().capture = removed_row;
  }
  for (const TaskRecord& task : t.add_tasks) {
    PgParams p = keyed(shard(task.execution), task.execution);
    p.add(static_cast<int64_t>(task.kind)).add_text(task.queue).add_bytes(task.payload);
    add("INSERT INTO tasks (shard_id, namespace, workflow_id, run_id, kind, queue, payload) "
        "VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING task_id",
        std::move(p), Check::kReturned);
    steps.back().capture = Step::Capture::kTaskId;
  }
  for (int64_t id : t.remove_timers) {
    add("DELETE FROM timers WHERE timer_id = $1 RETURNING shard_id", PgParams().add(id), Check::kReturned,
        fails_with(Status::aborted("timer " + std::to_string(id) + " no longer exists")));
    steps.back().capture = removed_row;
  }
  for (const TimerRecord& timer : t.add_timers) {
    PgParams p = keyed(shard(timer.execution), timer.execution);
    p.add(to_unix_nanos(timer.fire_at)).add_bytes(timer.payload);
    add("INSERT INTO timers (shard_id, namespace, workflow_id, run_id, fire_at, payload) "
        "VALUES ($1, $2, $3, $4, $5, $6) RETURNING timer_id",
        std::move(p), Check::kReturned);
    steps.back().capture = Step::Capture::kTimerId;
  }

  // A closed run's workflow and activity tasks and its timers are of no use
  // any more; its transfer rows stay (they carry the close to others).
  for (const ExecutionWrite& w : t.executions) {
    if (w.status == v1::WORKFLOW_EXECUTION_STATUS_RUNNING) continue;
    PgParams p = keyed(shard(w.key), w.key);
    p.add(static_cast<int64_t>(TaskKind::kTransfer));
    add(std::string("DELETE FROM tasks WHERE ") + kExecutionKey + " AND kind != $5", std::move(p));
    add(std::string("DELETE FROM timers WHERE ") + kExecutionKey, keyed(shard(w.key), w.key));
  }

  for (const VisibilityRecord& v : t.visibility) {
    PgParams p;
    p.add_text(v.key.namespace_id).add_text(v.key.workflow_id).add_text(v.key.run_id);
    p.add_text(v.workflow_type).add_text(v.task_queue).add(v.status).add(to_unix_nanos(v.start_time));
    if (v.close_time) {
      p.add(to_unix_nanos(*v.close_time));
    } else {
      p.add_null_int();
    }
    add("INSERT INTO visibility (namespace, workflow_id, run_id, workflow_type, task_queue, status, start_time, "
        "close_time) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (namespace, workflow_id, run_id) DO UPDATE "
        "SET workflow_type = excluded.workflow_type, task_queue = excluded.task_queue, status = excluded.status, "
        "start_time = excluded.start_time, close_time = excluded.close_time",
        std::move(p));
  }

  for (const BlobReference& r : t.add_blob_refs) {
    const std::string hash(history::as_bytes(r.sha256));
    // Touching the blob takes its row lock: a garbage collection on another
    // connection waits for this commit, then sees it as just used.
    add("UPDATE blobs SET touched_at = greatest(touched_at, $2) WHERE sha256 = $1 AND complete",
        PgParams().add_bytes(hash).add(to_unix_nanos(clock_.now())), Check::kChanged,
        fails_with(Status::failed_precondition("blob " + history::to_hex(r.sha256) + " referenced by " +
                                               r.owner.to_string() + " is not in the blob store")));
    PgParams p;
    p.add_bytes(hash).add_text(r.owner.namespace_id).add_text(r.owner.workflow_id).add_text(r.owner.run_id);
    add("INSERT INTO blob_refs (sha256, namespace, workflow_id, run_id) VALUES ($1, $2, $3, $4) "
        "ON CONFLICT DO NOTHING",
        std::move(p));
    // A blob an execution refers to is readable in its namespace.
    add("INSERT INTO blob_namespaces (blob_id, namespace) SELECT blob_id, $2 FROM blobs WHERE sha256 = $1 "
        "ON CONFLICT DO NOTHING",
        PgParams().add_bytes(hash).add_text(r.owner.namespace_id));
  }

  // Last, though its lock holds until COMMIT wherever it stands.
  for (int64_t s : shards) {
    Result<Step> f = fence(s);
    if (!f) return f.status();
    steps.push_back(std::move(*f));
  }
  return steps;
}

namespace {

// Whether `r` shows what `step` needs; records what it captures.
bool holds(const Step& step, const PgResult& r, CommitResult& result, std::vector<int64_t>& shards) {
  switch (step.check) {
    case Check::kNone:
      break;
    case Check::kChanged:
      if (r.affected() == 0) return false;
      break;
    case Check::kReturned:
      if (r.rows() == 0) return false;
      break;
  }
  if (step.capture == Step::Capture::kTaskId) result.task_ids.push_back(r.get_int(0, 0));
  if (step.capture == Step::Capture::kTimerId) result.timer_ids.push_back(r.get_int(0, 0));
  if (step.capture == Step::Capture::kShard) shards.push_back(r.get_int(0, 0));
  return true;
}

// The full disk's error among a failed batch's outcomes (the others may have
// been refused on their own before reaching the database).
Status why_no_room(const std::vector<Result<CommitResult>>& outcomes) {
  for (const auto& o : outcomes) {
    if (o.status().code() == StatusCode::kResourceExhausted) return o.status();
  }
  return Status::resource_exhausted("the database's disk is full");
}

// The new version of each execution write, in order.
void record_versions(const Transition& t, CommitResult& result) {
  for (const ExecutionWrite& w : t.executions) result.versions.push_back(w.expected_version + 1);
}

}  // namespace

bool PgTransitionWriter::run_savepoints(std::vector<std::vector<Step>*>& plans,
                                        std::vector<Result<CommitResult>*>& outcomes) {
  for (size_t i = 0; i < plans.size(); ++i) {
    Status s = db_->exec("SAVEPOINT transition");
    if (!s.is_ok()) {
      for (auto* o : outcomes) *o = s;
      return false;
    }
    CommitResult result;
    std::vector<int64_t> row_shards;
    for (const Step& step : *plans[i]) {
      Result<PgResult> r = db_->query(step.sql, step.params);
      if (!r) {
        s = r.status();
        break;
      }
      if (!holds(step, *r, result, row_shards)) {
        s = step.fail ? step.fail(*db_) : Status::aborted("a condition of the transition did not hold");
        if (s.is_ok()) s = Status::internal("condition failed without a reason");
        break;
      }
    }
    if (s.is_ok()) s = fence_rows(*plans[i], row_shards);
    if (s.is_ok()) s = db_->exec("RELEASE SAVEPOINT transition");
    if (s.is_ok()) {
      *outcomes[i] = std::move(result);
      continue;
    }
    if (db_->broken() || db_->out_of_space()) {
      // Nothing of the batch may stay: a full disk fails it whole, so that
      // all of it is tried again once there is room.
      for (auto* o : outcomes) *o = s;
      return false;
    }
    Status undo = db_->exec("ROLLBACK TO SAVEPOINT transition");
    if (undo.is_ok()) undo = db_->exec("RELEASE SAVEPOINT transition");
    if (!undo.is_ok()) {
      for (auto* o : outcomes) *o = undo;
      return false;
    }
    *outcomes[i] = s;
  }
  return true;
}

bool PgTransitionWriter::run_pipelined(std::vector<std::vector<Step>*>& plans,
                                       std::vector<Result<CommitResult>*>& outcomes, Status& failure) {
  // PQprepare waits for its answer, so it cannot run inside the pipeline.
  for (auto* plan : plans) {
    for (const Step& step : *plan) {
      Result<std::string> prepared = db_->prepare(step.sql, step.params);
      if (!prepared) {
        failure = prepared.status();
        return false;
      }
    }
  }
  failure = db_->enter_pipeline();
  if (!failure.is_ok()) return false;
  for (auto* plan : plans) {
    for (const Step& step : *plan) {
      failure = db_->send(step.sql, step.params);
      if (!failure.is_ok()) break;
    }
    if (!failure.is_ok()) break;
  }
  if (failure.is_ok()) failure = db_->sync();
  bool all_held = failure.is_ok();
  std::vector<CommitResult> results(plans.size());
  std::vector<std::vector<int64_t>> row_shards(plans.size());
  if (all_held) {
    for (size_t i = 0; i < plans.size() && all_held; ++i) {
      for (const Step& step : *plans[i]) {
        Result<PgResult> r = db_->next_result();
        if (!r || !holds(step, *r, results[i], row_shards[i])) {
          all_held = false;  // the rest are skipped by the server, and read off below
          break;
        }
      }
    }
  }
  Status left = db_->exit_pipeline();
  if (failure.is_ok()) failure = left;
  // Rows removed from a shard nothing else fenced (rare): fenced now, one
  // round trip each, still inside the transaction.
  for (size_t i = 0; i < plans.size() && all_held && failure.is_ok(); ++i) {
    if (row_shards[i].empty()) continue;
    if (Status fenced = fence_rows(*plans[i], row_shards[i]); !fenced.is_ok()) {
      all_held = false;
      if (db_->broken()) failure = fenced;
    }
  }
  if (all_held && failure.is_ok()) {
    for (size_t i = 0; i < plans.size(); ++i) *outcomes[i] = std::move(results[i]);
  }
  return all_held && failure.is_ok();
}

Status PgTransitionWriter::commit() {
  Status s = fault_hook_ ? fault_hook_(FaultPoint::kBeforeCommit) : Status::ok();
  if (!s.is_ok()) return s;
  s = db_->exec("COMMIT");
  if (!s.is_ok() && db_->broken()) {
    return Status::in_doubt(s.message() + " (the connection was lost at COMMIT: the batch may have committed)");
  }
  if (!s.is_ok()) return s;
  return fault_hook_ ? fault_hook_(FaultPoint::kAfterCommit) : Status::ok();
}

std::vector<Result<CommitResult>> PgTransitionWriter::attempt_batch(std::deque<Pending>& batch) {
  std::vector<Result<CommitResult>> outcomes(batch.size(), Result<CommitResult>(Status::internal("not run")));
  auto fail_all = [&](const Status& s) { outcomes.assign(batch.size(), Result<CommitResult>(s)); };

  // What each transition will run; one refused here never reaches the
  // database.
  std::vector<std::vector<Step>> planned(batch.size());
  std::vector<std::vector<Step>*> plans;
  std::vector<Result<CommitResult>*> planned_outcomes;
  for (size_t i = 0; i < batch.size(); ++i) {
    Result<std::vector<Step>> p = plan(batch[i].transition);
    if (!p) {
      outcomes[i] = p.status();
      continue;
    }
    planned[i] = std::move(*p);
    plans.push_back(&planned[i]);
    planned_outcomes.push_back(&outcomes[i]);
  }

  Status s = db_->broken() ? db_->reconnect() : Status::ok();
  if (s.is_ok() && !plans.empty()) {
    s = db_->exec("BEGIN");
    bool ran = false;
    if (s.is_ok() && shape_ == PgCommitShape::kPipelined) {
      ran = run_pipelined(plans, planned_outcomes, s);
      if (!ran && s.is_ok()) {
        // A condition failed: nothing of the batch stays, and it runs again
        // with savepoints, where the failure is its transition's alone.
        s = db_->exec("ROLLBACK");
        if (s.is_ok()) s = db_->exec("BEGIN");
      }
    }
    if (s.is_ok() && !ran) ran = run_savepoints(plans, planned_outcomes);
    if (!s.is_ok()) {
      fail_all(s);
      if (!db_->broken()) (void)db_->exec("ROLLBACK");
    } else if (!ran) {
      if (!db_->broken()) (void)db_->exec("ROLLBACK");
    } else {
      Status committed = commit();
      if (!committed.is_ok()) {
        if (!db_->broken()) (void)db_->exec("ROLLBACK");
        fail_all(committed);
      }
    }
  } else if (!s.is_ok()) {
    fail_all(s);
  }
  return outcomes;
}

void PgTransitionWriter::commit_batch(std::deque<Pending>& batch) {
  const auto started = std::chrono::steady_clock::now();
  std::vector<Result<CommitResult>> outcomes = attempt_batch(batch);
  bool closing = false;
  while (!closing && db_->take_out_of_space()) {
    // Room for part of the batch is not left unused while waiting for room
    // for all of it: the first half is tried at once, down to one write.
    if (narrow(batch)) {
      outcomes = attempt_batch(batch);
      continue;
    }
    closing = !wait_for_space(why_no_room(outcomes));
    if (!closing) outcomes = attempt_batch(batch);
  }
  if (!closing) {
    stall_.ended();
    std::lock_guard lock(mu_);
    give_up_waiting_ = false;  // the disk takes writes again
    // Back to full batches, doubling with each commit that found room.
    batch_limit_ = std::min(max_batch_, batch_limit_ * 2);
  }
  for (size_t i = 0; i < batch.size(); ++i) {
    if (outcomes[i].is_ok()) record_versions(batch[i].transition, *outcomes[i]);
  }

  int64_t transitions = 0;
  for (const auto& o : outcomes) transitions += o.is_ok() ? 1 : 0;
  {
    std::lock_guard lock(mu_);
    stats_.transitions += transitions;
    if (transitions > 0) {
      ++stats_.batches;
      stats_.largest_batch = std::max(stats_.largest_batch, transitions);
      const int bucket = std::bit_width(static_cast<uint64_t>(transitions)) - 1;
      ++stats_.batch_sizes[std::min(bucket, kBatchSizeBuckets - 1)];
      const std::chrono::nanoseconds took = std::chrono::steady_clock::now() - started;
      const double seconds = std::chrono::duration<double>(took).count();
      ++stats_.commit_times[std::lower_bound(kCommitSecondsBounds.begin(), kCommitSecondsBounds.end(), seconds) -
                            kCommitSecondsBounds.begin()];
      stats_.commit_time += took;
    }
  }
  for (size_t i = 0; i < batch.size(); ++i) batch[i].done(std::move(outcomes[i]));
}

}  // namespace reprise::engine
