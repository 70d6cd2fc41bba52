#include "engine/store/transition_writer.hpp"

#include <algorithm>
#include <bit>
#include <chrono>
#include <utility>

#include "engine/store/bind_key.hpp"
#include "engine/thread_name.hpp"

namespace reprise::engine {

namespace {

Status explain_lost_update(SqliteDb& db, const ExecutionWrite& w) {
  Result<Statement> s = db.prepare(
      "SELECT version, next_event_id FROM executions WHERE namespace = ?1 AND workflow_id = ?2 AND run_id = ?3");
  if (!s) return s.status();
  Result<bool> row = bind_key(*s, w.key).step();
  if (!row) return row.status();
  if (!*row) return Status::not_found("execution " + w.key.to_string() + " does not exist");
  const int64_t version = s->column_int(0);
  const int64_t next_event_id = s->column_int(1);
  if (version != w.expected_version) {
    return Status::aborted("execution " + w.key.to_string() + " is at version " + std::to_string(version) +
                           ", the writer expected " + std::to_string(w.expected_version));
  }
  if (!w.events) return Status::aborted("execution " + w.key.to_string() + " changed during the write");
  return Status::invalid_argument("history batch for " + w.key.to_string() + " starts at event " +
                                  std::to_string(w.events->first_event_id) + " but the next event is " +
                                  std::to_string(next_event_id));
}

}  // namespace

TransitionWriter::TransitionWriter(std::unique_ptr<SqliteDb> db, int max_batch, FaultHook fault_hook,
                                   bool wait_when_full, StallReport report, bool own_thread,
                                   WalCheckpointer* checkpointer)
    : db_(std::move(db)),
      max_batch_(max_batch < 1 ? 1 : max_batch),
      fault_hook_(std::move(fault_hook)),
      wait_when_full_(wait_when_full && own_thread),
      own_thread_(own_thread),
      checkpointer_(checkpointer),
      stall_(std::move(report)),
      batch_limit_(max_batch_) {
  if (own_thread_) {
    thread_ = std::thread([this] { run(); });
    name_thread(thread_, "writer");
  }
}

TransitionWriter::~TransitionWriter() {
  std::deque<Pending> left;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    if (!own_thread_) left.swap(queue_);  // a thread drains the queue before it ends
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  for (Pending& p : left) p.done(Status::unavailable("store is closing"));
}

bool TransitionWriter::commit_next_batch() {
  std::deque<Pending> batch;
  {
    std::lock_guard lock(mu_);
    while (!queue_.empty() && static_cast<int>(batch.size()) < batch_limit()) {
      batch.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
  }
  if (batch.empty()) return false;
  commit_batch(batch);
  if (checkpointer_ != nullptr) checkpointer_->between_batches(*db_, true);
  return true;
}

size_t TransitionWriter::queued() const {
  std::lock_guard lock(mu_);
  return queue_.size();
}

void TransitionWriter::submit(Transition transition, CommitCallback done) {
  {
    std::lock_guard lock(mu_);
    if (!stopping_) {
      queue_.push_back({std::move(transition), nullptr, std::move(done)});
      cv_.notify_one();
      return;
    }
  }
  done(Status::unavailable("store is closing"));
}

void TransitionWriter::submit_job(Job job, std::function<void(Status)> done) {
  {
    std::lock_guard lock(mu_);
    if (!stopping_) {
      queue_.push_back({Transition(), std::move(job), [done](Result<CommitResult> r) { done(r.status()); }});
      cv_.notify_one();
      return;
    }
  }
  done(Status::unavailable("store is closing"));
}

TransitionWriter::Stats TransitionWriter::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

std::string TransitionWriter::problem() const { return stall_.problem(); }

void TransitionWriter::run() {
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
    if (checkpointer_ != nullptr) checkpointer_->between_batches(*db_, queued() == 0);
  }
}

void TransitionWriter::commit_batch(std::deque<Pending>& batch) {
  const auto started = std::chrono::steady_clock::now();
  std::vector<Result<CommitResult>> outcomes = attempt_batch(batch);
  bool closing = false;
  while (!closing && db_->take_out_of_space() && wait_when_full_) {
    // Room for part of the batch is not left unused while waiting for room
    // for all of it: the first half is tried at once, down to one write.
    if (narrow(batch)) {
      outcomes = attempt_batch(batch);
      continue;
    }
    // Every outcome carries the batch's failure.
    closing = !wait_for_space(outcomes.front().status());
    if (!closing) outcomes = attempt_batch(batch);
  }
  if (!closing) stall_.ended();
  if (!closing) {
    std::lock_guard lock(mu_);
    give_up_waiting_ = false;  // the disk takes writes again
    // Back to full batches, doubling with each commit that found room.
    batch_limit_ = std::min(max_batch_, batch_limit_ * 2);
  }

  int64_t transitions = 0, jobs = 0;
  for (size_t i = 0; i < batch.size(); ++i) {
    if (outcomes[i].is_ok()) ++(batch[i].job ? jobs : transitions);
  }
  {
    std::lock_guard lock(mu_);
    stats_.transitions += transitions;
    stats_.jobs += jobs;
    if (transitions + jobs > 0) {
      ++stats_.batches;
      stats_.largest_batch = std::max(stats_.largest_batch, transitions + jobs);
      const int bucket = std::bit_width(static_cast<uint64_t>(transitions + jobs)) - 1;
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

int TransitionWriter::batch_limit() const {
  // Closing, or told to stop waiting: what meets a full disk fails, and may
  // as well fail in full batches.
  return stopping_ || give_up_waiting_ ? max_batch_ : batch_limit_;
}

bool TransitionWriter::narrow(std::deque<Pending>& batch) {
  std::lock_guard lock(mu_);
  if (batch.size() < 2 || stopping_ || give_up_waiting_) return false;
  batch_limit_ = static_cast<int>(give_back_half(batch, queue_));
  return true;
}

bool TransitionWriter::wait_for_space(const Status& error) {
  const std::chrono::milliseconds delay = stall_.failed(error);
  // What a checkpoint frees goes back to the file system: the WAL is the
  // file that grew. It fails while the disk is full, and that is fine.
  (void)db_->exec("PRAGMA wal_checkpoint(TRUNCATE)");
  (void)db_->take_out_of_space();
  std::unique_lock lock(mu_);
  return !cv_.wait_for(lock, delay, [this] { return stopping_ || give_up_waiting_; });
}

void TransitionWriter::stop_waiting_for_space() {
  {
    std::lock_guard lock(mu_);
    give_up_waiting_ = true;
  }
  cv_.notify_all();
}

std::vector<Result<CommitResult>> TransitionWriter::attempt_batch(std::deque<Pending>& batch) {
  std::vector<Result<CommitResult>> outcomes;
  outcomes.reserve(batch.size());
  auto fail_all = [&](const Status& s) { outcomes.assign(batch.size(), Result<CommitResult>(s)); };
  // A full disk met outside a batch (the checkpoint between two) is not
  // this batch's: taken for it, a batch that committed would be written
  // again, and its transitions refused as conflicting with themselves.
  (void)db_->take_out_of_space();

  Status status = db_->exec_cached("BEGIN IMMEDIATE");
  if (!status.is_ok()) {
    fail_all(status);
  } else {
    for (Pending& p : batch) {
      CommitResult result;
      Status s = db_->exec_cached("SAVEPOINT transition");
      if (s.is_ok()) s = p.job ? p.job(*db_) : apply(p.transition, result);
      if (s.is_ok()) s = db_->exec_cached("RELEASE transition");
      if (s.is_ok()) {
        outcomes.emplace_back(std::move(result));
        continue;
      }
      if (!db_->in_transaction() || db_->out_of_space()) {
        // SQLite rolled the whole transaction back (I/O error), or the disk
        // is full: nothing of this batch is written, so nothing of it may
        // succeed (and all of it is tried again once there is room).
        if (db_->in_transaction()) (void)db_->exec("ROLLBACK");
        fail_all(s);
        break;
      }
      Status undo = db_->exec("ROLLBACK TO transition");
      if (undo.is_ok()) undo = db_->exec("RELEASE transition");
      if (!undo.is_ok()) {
        (void)db_->exec("ROLLBACK");
        fail_all(undo);
        break;
      }
      outcomes.emplace_back(s);
    }
    if (db_->in_transaction()) {
      Status commit = fault_hook_ ? fault_hook_(FaultPoint::kBeforeCommit) : Status::ok();
      if (commit.is_ok()) commit = db_->exec_cached("COMMIT");
      if (!commit.is_ok()) {
        if (db_->in_transaction()) (void)db_->exec("ROLLBACK");
        fail_all(commit);
      } else if (fault_hook_) {
        Status after = fault_hook_(FaultPoint::kAfterCommit);
        if (!after.is_ok()) fail_all(after);
      }
    }
  }

  return outcomes;
}

Status TransitionWriter::apply(const Transition& t, CommitResult& result) {
  for (const ExecutionKey& key : t.delete_executions) REPRISE_RETURN_IF_ERROR(delete_execution(key));
  for (const ExecutionWrite& w : t.executions) REPRISE_RETURN_IF_ERROR(apply_execution(w, result));
  for (const CurrentRunWrite& w : t.current_runs) REPRISE_RETURN_IF_ERROR(apply_current_run(w));
  REPRISE_RETURN_IF_ERROR(apply_tasks(t, result));
  REPRISE_RETURN_IF_ERROR(apply_timers(t, result));
  for (const ExecutionWrite& w : t.executions) {
    if (w.status != v1::WORKFLOW_EXECUTION_STATUS_RUNNING) REPRISE_RETURN_IF_ERROR(drop_pending_work(w.key));
  }
  for (const VisibilityRecord& v : t.visibility) REPRISE_RETURN_IF_ERROR(apply_visibility(v));
  for (const BlobReference& r : t.add_blob_refs) REPRISE_RETURN_IF_ERROR(apply_blob_ref(r));
  return Status::ok();
}

Status TransitionWriter::apply_execution(const ExecutionWrite& w, CommitResult& result) {
  if (w.events) {
    const HistoryBatch& b = *w.events;
    if (b.first_event_id < 1 || b.last_event_id < b.first_event_id || b.data.empty()) {
      return Status::invalid_argument("history batch for " + w.key.to_string() + " has a bad range " +
                                      std::to_string(b.first_event_id) + ".." + std::to_string(b.last_event_id));
    }
  }
  const int64_t next_event_id = w.events ? w.events->last_event_id + 1 : 1;

  if (w.expected_version == 0) {
    if (w.events && w.events->first_event_id != 1) {
      return Status::invalid_argument("history of new execution " + w.key.to_string() + " must start at event 1");
    }
    Result<Statement> s = db_->prepare(
        "INSERT INTO executions (namespace, workflow_id, run_id, version, next_event_id, status, state) "
        "VALUES (?1, ?2, ?3, 1, ?4, ?5, ?6) ON CONFLICT DO NOTHING");
    if (!s) return s.status();
    REPRISE_RETURN_IF_ERROR(bind_key(*s, w.key).bind(4, next_event_id).bind(5, w.status).bind_blob(6, w.state).run());
    if (db_->changes() == 0) return Status::already_exists("execution " + w.key.to_string() + " already exists");
    result.versions.push_back(1);
  } else {
    Result<Statement> s = db_->prepare(
        "UPDATE executions SET version = version + 1, next_event_id = coalesce(?6, next_event_id), status = ?7, "
        "state = ?8 WHERE namespace = ?1 AND workflow_id = ?2 AND run_id = ?3 AND version = ?4 "
        "AND (?5 IS NULL OR next_event_id = ?5)");
    if (!s) return s.status();
    bind_key(*s, w.key).bind(4, w.expected_version);
    if (w.events) {
      s->bind(5, w.events->first_event_id).bind(6, next_event_id);
    } else {
      s->bind_null(5).bind_null(6);
    }
    REPRISE_RETURN_IF_ERROR(s->bind(7, w.status).bind_blob(8, w.state).run());
    if (db_->changes() == 0) return explain_lost_update(*db_, w);
    result.versions.push_back(w.expected_version + 1);
  }

  if (!w.events) return Status::ok();
  Result<Statement> h = db_->prepare(
      "INSERT INTO history (namespace, workflow_id, run_id, last_event_id, first_event_id, data) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
  if (!h) return h.status();
  return bind_key(*h, w.key)
      .bind(4, w.events->last_event_id)
      .bind(5, w.events->first_event_id)
      .bind_blob(6, w.events->data)
      .run();
}

Status TransitionWriter::apply_current_run(const CurrentRunWrite& w) {
  const CurrentRun& r = w.run;
  if (w.expected_run_id.empty()) {
    Result<Statement> s = db_->prepare(
        "INSERT INTO current_runs (namespace, workflow_id, run_id, status, start_request_id) "
        "VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT DO NOTHING");
    if (!s) return s.status();
    REPRISE_RETURN_IF_ERROR(s->bind(1, r.namespace_id)
                                .bind(2, r.workflow_id)
                                .bind(3, r.run_id)
                                .bind(4, r.status)
                                .bind(5, r.start_request_id)
                                .run());
    if (db_->changes() == 0) {
      return Status::already_exists("workflow id '" + r.workflow_id + "' already has a current run");
    }
    return Status::ok();
  }
  Result<Statement> s = db_->prepare(
      "UPDATE current_runs SET run_id = ?3, status = ?4, start_request_id = ?5 "
      "WHERE namespace = ?1 AND workflow_id = ?2 AND run_id = ?6");
  if (!s) return s.status();
  REPRISE_RETURN_IF_ERROR(s->bind(1, r.namespace_id)
                              .bind(2, r.workflow_id)
                              .bind(3, r.run_id)
                              .bind(4, r.status)
                              .bind(5, r.start_request_id)
                              .bind(6, w.expected_run_id)
                              .run());
  if (db_->changes() == 0) {
    return Status::aborted("current run of workflow id '" + r.workflow_id + "' is no longer " + w.expected_run_id);
  }
  return Status::ok();
}

Status TransitionWriter::apply_tasks(const Transition& t, CommitResult& result) {
  for (int64_t id : t.remove_tasks) {
    Result<Statement> s = db_->prepare("DELETE FROM tasks WHERE task_id = ?1");
    if (!s) return s.status();
    REPRISE_RETURN_IF_ERROR(s->bind(1, id).run());
    if (db_->changes() == 0) return Status::aborted("task " + std::to_string(id) + " no longer exists");
  }
  for (const TaskRecord& task : t.add_tasks) {
    Result<Statement> s = db_->prepare(
        "INSERT INTO tasks (kind, queue, namespace, workflow_id, run_id, payload) "
        "VALUES (?1, ?2, ?3, ?4, ?5, ?6) RETURNING task_id");
    if (!s) return s.status();
    s->bind(1, static_cast<int64_t>(task.kind)).bind(2, task.queue);
    s->bind(3, task.execution.namespace_id).bind(4, task.execution.workflow_id).bind(5, task.execution.run_id);
    Result<bool> row = s->bind_blob(6, task.payload).step();
    if (!row) return row.status();
    result.task_ids.push_back(s->column_int(0));
    REPRISE_RETURN_IF_ERROR(s->run());  // finish the statement
  }
  return Status::ok();
}

Status TransitionWriter::apply_timers(const Transition& t, CommitResult& result) {
  for (int64_t id : t.remove_timers) {
    Result<Statement> s = db_->prepare("DELETE FROM timers WHERE timer_id = ?1");
    if (!s) return s.status();
    REPRISE_RETURN_IF_ERROR(s->bind(1, id).run());
    if (db_->changes() == 0) return Status::aborted("timer " + std::to_string(id) + " no longer exists");
  }
  for (const TimerRecord& timer : t.add_timers) {
    Result<Statement> s = db_->prepare(
        "INSERT INTO timers (fire_at, namespace, workflow_id, run_id, payload) "
        "VALUES (?1, ?2, ?3, ?4, ?5) RETURNING timer_id");
    if (!s) return s.status();
    s->bind(1, to_unix_nanos(timer.fire_at));
    s->bind(2, timer.execution.namespace_id).bind(3, timer.execution.workflow_id).bind(4, timer.execution.run_id);
    Result<bool> row = s->bind_blob(5, timer.payload).step();
    if (!row) return row.status();
    result.timer_ids.push_back(s->column_int(0));
    REPRISE_RETURN_IF_ERROR(s->run());
  }
  return Status::ok();
}

Status TransitionWriter::apply_visibility(const VisibilityRecord& v) {
  Result<Statement> s = db_->prepare(
      "INSERT INTO visibility (namespace, workflow_id, run_id, workflow_type, task_queue, status, start_time, "
      "close_time) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT (namespace, workflow_id, run_id) DO UPDATE "
      "SET workflow_type = excluded.workflow_type, task_queue = excluded.task_queue, status = excluded.status, "
      "start_time = excluded.start_time, close_time = excluded.close_time");
  if (!s) return s.status();
  bind_key(*s, v.key).bind(4, v.workflow_type).bind(5, v.task_queue).bind(6, v.status);
  s->bind(7, to_unix_nanos(v.start_time));
  if (v.close_time) {
    s->bind(8, to_unix_nanos(*v.close_time));
  } else {
    s->bind_null(8);
  }
  return s->run();
}

Status TransitionWriter::apply_blob_ref(const BlobReference& r) {
  const std::string_view hash = history::as_bytes(r.sha256);
  Result<Statement> exists = db_->prepare("SELECT 1 FROM blobs WHERE sha256 = ?1 AND complete = 1");
  if (!exists) return exists.status();
  Result<bool> row = exists->bind_blob(1, hash).step();
  if (!row) return row.status();
  if (!*row) {
    return Status::failed_precondition("blob " + history::to_hex(r.sha256) + " referenced by " + r.owner.to_string() +
                                       " is not in the blob store");
  }
  Result<Statement> s = db_->prepare(
      "INSERT INTO blob_refs (sha256, namespace, workflow_id, run_id) VALUES (?4, ?1, ?2, ?3) ON CONFLICT DO NOTHING");
  if (!s) return s.status();
  return bind_key(*s, r.owner).bind_blob(4, hash).run();
}

Status TransitionWriter::drop_pending_work(const ExecutionKey& key) {
  static const std::string kDeletes[] = {
      "DELETE FROM tasks WHERE namespace = ?1 AND workflow_id = ?2 AND run_id = ?3 AND kind != " +
          std::to_string(static_cast<int>(TaskKind::kTransfer)),
      "DELETE FROM timers WHERE namespace = ?1 AND workflow_id = ?2 AND run_id = ?3",
  };
  for (const std::string& sql : kDeletes) {
    Result<Statement> s = db_->prepare(sql.c_str());
    if (!s) return s.status();
    REPRISE_RETURN_IF_ERROR(bind_key(*s, key).run());
  }
  return Status::ok();
}

Status TransitionWriter::delete_execution(const ExecutionKey& key) {
  // Its transfer rows stay: a run deleted right after it closed still owes
  // others what they carry (its children's parent-close policies); each goes
  // once carried out, and reads nothing of the deleted run it needs.
  static const std::string kDeletes[] = {
      "DELETE FROM executions WHERE namespace = ?1 AND workflow_id = ?2 AND run_id = ?3",
      "DELETE FROM history WHERE namespace = ?1 AND workflow_id = ?2 AND run_id = ?3",
      "DELETE FROM tasks WHERE namespace = ?1 AND workflow_id = ?2 AND run_id = ?3 AND kind != " +
          std::to_string(static_cast<int>(TaskKind::kTransfer)),
      "DELETE FROM timers WHERE namespace = ?1 AND workflow_id = ?2 AND run_id = ?3",
      "DELETE FROM visibility WHERE namespace = ?1 AND workflow_id = ?2 AND run_id = ?3",
      "DELETE FROM blob_refs WHERE namespace = ?1 AND workflow_id = ?2 AND run_id = ?3",
      "DELETE FROM current_runs WHERE namespace = ?1 AND workflow_id = ?2 AND run_id = ?3",
  };
  for (const std::string& sql : kDeletes) {
    Result<Statement> s = db_->prepare(sql.c_str());
    if (!s) return s.status();
    REPRISE_RETURN_IF_ERROR(bind_key(*s, key).run());
  }
  return Status::ok();
}

}  // namespace reprise::engine
