// Reading history: pages of events for GetHistory and for the tasks the
// engine hands out, and history long-polls, which wait on an execution's
// watcher list until a commit changes it.
#include <algorithm>

#include "engine/engine.hpp"
#include "engine/request_validation.hpp"
#include "history/run_chain.hpp"
#include "reprise/detail/proto_time.hpp"

namespace reprise::engine {

namespace {

constexpr int kHistoryPageDefault = 1000;

std::string encode_page(int64_t next_event_id) {
  internal::HistoryPageToken token;
  token.set_next_event_id(next_event_id);
  return token.SerializeAsString();
}

}  // namespace

Status Engine::fill_history(const ExecutionKey& key, int64_t first_event_id, int max_events, v1::History& out,
                            int64_t& next_event_id, int64_t known_last) {
  thread_local history::EventBatchCodec codec;  // every poll reads history: keep the zstd contexts
  next_event_id = first_event_id;
  while (out.events_size() < max_events) {
    Result<std::vector<HistoryBatch>> batches = read_history(key, next_event_id, 16, known_last);
    if (!batches) return batches.status();
    if (batches->empty()) break;
    for (const HistoryBatch& b : *batches) {
      v1::History page;
      REPRISE_RETURN_IF_ERROR(codec.decode(b.data, page));
      for (auto& e : *page.mutable_events()) {
        if (e.event_id() < next_event_id || out.events_size() >= max_events) continue;
        next_event_id = e.event_id() + 1;
        *out.add_events() = std::move(e);
      }
      if (out.events_size() >= max_events) break;
    }
  }
  return Status::ok();
}

int Engine::history_page_size(int32_t asked) { return asked > 0 ? asked : kHistoryPageDefault; }

Status Engine::task_history_page(const ExecutionKey& key, internal::HistoryPageToken from, int max_events,
                                 v1::History& out, std::string& next_page_token) {
  next_page_token.clear();
  int64_t next = from.next_event_id();
  const int64_t last = from.last_event_id();
  if (next <= last) {
    const int wanted = static_cast<int>(std::min<int64_t>(max_events, last - next + 1));
    const int before = out.events_size();
    REPRISE_RETURN_IF_ERROR(fill_history(key, next, wanted, out, next, last));
    if (out.events_size() - before < wanted) {
      return Status::not_found("the history of " + key.to_string() + " ends before event " + std::to_string(last) +
                               ", the last of the task's: the run was deleted");
    }
  }
  if (next <= last) {
    from.set_next_event_id(next);
    next_page_token = from.SerializeAsString();
    return Status::ok();
  }
  for (auto& e : *from.mutable_unwritten_events()) *out.add_events() = std::move(e);
  return Status::ok();
}

void Engine::get_history(v1::GetHistoryRequest request, Reply<v1::GetHistoryResponse> reply,
                         std::shared_ptr<PollTicket> ticket) {
  if (Status s = validate_request(request); !s) return reply(s);
  std::string ns = request.namespace_();
  if (Status s = check_namespace(ns); !s) return reply(s);
  on_read_pool(reply, [this, ns = std::move(ns), request = std::move(request), reply, ticket]() mutable {
    history_blocking(std::move(ns), std::move(request), std::move(reply), std::move(ticket));
  });
}

void Engine::history_blocking(std::string ns, v1::GetHistoryRequest request, Reply<v1::GetHistoryResponse> reply,
                              std::shared_ptr<PollTicket> ticket) {
  Result<ExecutionKey> resolved = resolve(ns, request.workflow_execution());
  if (!resolved) return reply(resolved.status());
  const ExecutionKey key = *resolved;
  int64_t first = request.first_event_id() > 0 ? request.first_event_id() : 1;
  const int max_events = history_page_size(request.maximum_page_size());
  if (!request.next_page_token().empty()) {
    internal::HistoryPageToken token;
    if (!token.ParseFromString(request.next_page_token()) || token.next_event_id() < 1) {
      return reply(Status::invalid_argument("next_page_token is malformed"));
    }
    if (token.last_event_id() > 0) {
      // The rest of a task's history: written long ago, nothing to wait for.
      v1::GetHistoryResponse out;
      std::string next;
      if (Status s = task_history_page(key, std::move(token), max_events, *out.mutable_history(), next); !s) {
        return reply(s);
      }
      out.set_next_page_token(std::move(next));
      return reply(std::move(out));
    }
    first = token.next_event_id();
  }
  const auto wait = std::min<std::chrono::milliseconds>(
      request.wait_timeout().seconds() > 0 || request.wait_timeout().nanos() > 0
          ? std::chrono::duration_cast<std::chrono::milliseconds>(to_nanos(request.wait_timeout()))
          : options_.poll_timeout,
      options_.max_history_wait);
  const auto deadline = deadlines_.now() + wait;
  OperationRef in_flight = begin_op();
  if (!in_flight) return reply(Status::unavailable("the server is shutting down"));
  // Exactly one answer, whoever gives it: the read, the wait's end, shutdown.
  auto answered = std::make_shared<std::atomic<bool>>(false);
  auto wait_deadline = std::make_shared<std::atomic<Deadlines::Id>>(0);
  auto finish = [this, answered, wait_deadline, reply, in_flight](Result<v1::GetHistoryResponse> r) {
    if (answered->exchange(true)) return;
    // The deadline holds the waiting closure: it goes now, not when due.
    deadlines_.cancel(wait_deadline->load());
    reply(std::move(r));
    in_flight->end();  // a poll ticket may keep this closure long after
  };

  // follow_runs: this run closed into the next of its chain; the wait goes
  // on there for what is left of it, answering the same caller once.
  auto follow = [this, ns, request, reply, ticket, answered, wait_deadline, deadline](std::string next_run) {
    if (answered->exchange(true)) return;
    deadlines_.cancel(wait_deadline->load());
    v1::GetHistoryRequest next = request;
    next.mutable_workflow_execution()->set_run_id(std::move(next_run));
    // At least a millisecond: a zero wait_timeout means the server's default.
    const std::chrono::nanoseconds left =
        std::max<std::chrono::nanoseconds>(deadline - deadlines_.now(), std::chrono::milliseconds(1));
    set_duration(next.mutable_wait_timeout(), left);
    on_read_pool(reply, [this, ns, next = std::move(next), reply, ticket]() mutable {
      history_blocking(std::move(ns), std::move(next), std::move(reply), std::move(ticket));
    });
  };

  // Reads what is there; when the caller wants to wait and nothing new is
  // there yet, parks until the execution changes or the wait ends.
  auto attempt = std::make_shared<std::function<void()>>();
  auto watch_id = std::make_shared<std::atomic<uint64_t>>(0);
  *attempt = [this, key, first, max_events, request, finish, follow, answered, deadline, watch_id,
              attempt_weak = std::weak_ptr(attempt)] {
    if (answered->load()) return;
    if (closing()) return finish(v1::GetHistoryResponse());
    auto again = attempt_weak.lock();
    if (!again) return;
    if (request.wait_new_event()) {
      // Watch before reading: a change committed after the read would
      // otherwise wake nobody until the deadline.
      const uint64_t id = watch(key, [this, again] { executor_.post([again] { (*again)(); }); });
      watch_id->store(id);
    }
    auto done = [&](Result<v1::GetHistoryResponse> r) {
      unwatch(key, watch_id->load());
      finish(std::move(r));
    };
    Result<ExecutionRecord> record = read_execution(key);
    if (!record) return done(record.status());
    const bool closed = record->status != v1::WORKFLOW_EXECUTION_STATUS_RUNNING;
    v1::GetHistoryResponse out;
    int64_t next = first;
    if (request.close_event_only()) {
      if (closed) next = record->next_event_id - 1;
      if (closed || !request.wait_new_event()) {
        if (Status s = fill_history(key, next, 1, *out.mutable_history(), next, record->next_event_id - 1); !s) {
          return done(s);
        }
        if (!closed) out.clear_history();
        if (request.follow_runs() && request.wait_new_event() && out.history().events_size() == 1) {
          if (std::string next_run = history::next_run_named_by(out.history().events(0)); !next_run.empty()) {
            unwatch(key, watch_id->load());
            return follow(std::move(next_run));
          }
        }
        if (request.follow_runs()) out.set_run_id(key.run_id);
        return done(out);
      }
    } else {
      if (Status s = fill_history(key, first, max_events, *out.mutable_history(), next, record->next_event_id - 1);
          !s) {
        return done(s);
      }
      const bool more = next < record->next_event_id;
      if (out.history().events_size() > 0 || closed || !request.wait_new_event()) {
        if (more) out.set_next_page_token(encode_page(next));
        return done(out);
      }
    }
    if (deadlines_.now() >= deadline) return done(v1::GetHistoryResponse());
    // Parked: the watch wakes this again. If the wait ended meanwhile, the
    // watcher goes now rather than at the next change.
    if (answered->load()) unwatch(key, watch_id->load());
  };
  // The wait ends at its deadline or when the caller goes away; either way
  // the watcher goes too.
  // The watcher goes before the answer, so a caller that has its answer sees
  // no watcher left; and again after, in case an attempt running meanwhile
  // (on the read pool or the executor) watched again.
  auto give_up = [this, key, finish, watch_id] {
    unwatch(key, watch_id->load());
    finish(v1::GetHistoryResponse());
    unwatch(key, watch_id->load());
  };
  // Holding `attempt` keeps the waiting closure alive until the wait ends.
  wait_deadline->store(deadlines_.schedule(deadline, [give_up, attempt] { give_up(); }));
  if (ticket) ticket->on_cancel(give_up);
  (*attempt)();
}

Reply<v1::StartWorkflowResponse> Engine::answer_with_result(const v1::StartWorkflowRequest& request,
                                                            Reply<v1::StartWorkflowResponse> reply) {
  if (!request.wait_for_result()) return reply;
  v1::GetHistoryRequest wait;
  wait.set_namespace_(request.namespace_());
  wait.mutable_workflow_execution()->set_workflow_id(request.workflow_id());
  wait.set_wait_new_event(true);
  wait.set_close_event_only(true);
  wait.set_follow_runs(true);
  *wait.mutable_wait_timeout() = request.wait_timeout();
  return [this, wait = std::move(wait), reply = std::move(reply)](Result<v1::StartWorkflowResponse> started) mutable {
    // An eager task must reach its worker now, not after the result it leads to.
    if (!started || !started->eager_workflow_task().task_token().empty()) return reply(std::move(started));
    std::string ns = wait.namespace_();
    if (Status s = check_namespace(ns); !s) return reply(std::move(started));
    wait.mutable_workflow_execution()->set_run_id(started->run_id());
    // The start happened whatever the wait's outcome: a wait that fails
    // answers the start alone, and the caller waits with GetHistory.
    auto answer = [reply, started = std::move(*started)](Result<v1::GetHistoryResponse> closed) {
      v1::StartWorkflowResponse out = started;
      if (closed && closed->history().events_size() == 1) {
        *out.mutable_close_event() = std::move(*closed->mutable_history()->mutable_events(0));
        out.set_close_run_id(closed->run_id());
      }
      reply(std::move(out));
    };
    on_read_pool(answer, [this, ns = std::move(ns), wait = std::move(wait), answer]() mutable {
      history_blocking(std::move(ns), std::move(wait), std::move(answer), nullptr);
    });
  };
}

uint64_t Engine::watch(const ExecutionKey& key, std::function<void()> wake) {
  std::lock_guard lock(watch_mu_);
  const uint64_t id = next_watch_id_++;
  watchers_[key].emplace(id, std::move(wake));
  return id;
}

size_t Engine::parked_history_waits() {
  std::lock_guard lock(watch_mu_);
  size_t n = 0;
  for (const auto& [key, waits] : watchers_) n += waits.size();
  return n;
}

void Engine::unwatch(const ExecutionKey& key, uint64_t id) {
  std::lock_guard lock(watch_mu_);
  auto it = watchers_.find(key);
  if (it == watchers_.end()) return;
  it->second.erase(id);
  if (it->second.empty()) watchers_.erase(it);
}

void Engine::wake_watchers(const ExecutionKey& key) {
  std::map<uint64_t, std::function<void()>> woken;
  {
    std::lock_guard lock(watch_mu_);
    auto it = watchers_.find(key);
    if (it == watchers_.end()) return;
    woken = std::move(it->second);
    watchers_.erase(it);
  }
  for (auto& [id, w] : woken) w();
}

}  // namespace reprise::engine
