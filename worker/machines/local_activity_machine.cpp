#include "worker/machines/local_activity_machine.hpp"

#include "reprise/codec.hpp"
#include "worker/machines/nondeterminism.hpp"

namespace reprise::worker {

LocalActivityMachine::LocalActivityMachine(int64_t seq, v1::ScheduleActivityTaskCommandAttributes request,
                                           std::shared_ptr<detail::Pending> pending)
    : CommandMachine(v1::Command(), std::move(pending)), seq_(seq), request_(std::move(request)) {}

const char* LocalActivityMachine::name(State s) {
  switch (s) {
    case State::kRunning:
      return "running";
    case State::kMarkerCommandCreated:
      return "marker command created";
    case State::kRecorded:
      return "recorded";
  }
  return "?";
}

void LocalActivityMachine::resolve(const LocalActivityOutcome& outcome, FutureResolver& futures) {
  const std::optional<State> to = next_state(kTable, state_, Input::kOutcome);
  if (!to) return;  // resolved already
  state_ = *to;
  execution_.reset();
  command_ = marker_command(kLocalActivityMarker, std::to_string(seq_));
  v1::RecordMarkerCommandAttributes& m = *command_.mutable_record_marker();
  *(*m.mutable_details())["type"].add_payloads() = to_payload(request_.activity_type().name());
  *(*m.mutable_details())["attempts"].add_payloads() = to_payload(outcome.attempts);
  if (outcome.failure) {
    *m.mutable_failure() = *outcome.failure;
    pending_->failure = *outcome.failure;
  } else {
    (*m.mutable_details())["result"] = outcome.result;
    pending_->result = outcome.result;
  }
  request_.clear_input();  // not needed again
  futures.resolve(pending_);
}

LocalActivityOutcome LocalActivityMachine::recorded_outcome(const v1::MarkerRecordedEventAttributes& marker) {
  LocalActivityOutcome out;
  // The server keeps an empty failure on every marker: one without a
  // result is the failed one.
  if (auto result = marker.details().find("result"); result != marker.details().end()) {
    out.result = result->second;
  } else {
    out.failure = marker.failure();
  }
  if (auto attempts = marker.details().find("attempts");
      attempts != marker.details().end() && attempts->second.payloads_size() == 1) {
    try {
      out.attempts = from_payload<int>(attempts->second.payloads(0), "a local activity's attempts");
    } catch (const PayloadError&) {
      // Informational only.
    }
  }
  return out;
}

bool LocalActivityMachine::matches(const v1::HistoryEvent& e) const {
  return state_ == State::kMarkerCommandCreated && e.has_marker_recorded() &&
         e.marker_recorded().marker_name() == kLocalActivityMarker &&
         marker_id(e.marker_recorded().details()) == std::to_string(seq_);
}

std::optional<NonDeterminism> LocalActivityMachine::apply(const v1::HistoryEvent& e, FutureResolver&) {
  const std::optional<State> to =
      e.has_marker_recorded() ? next_state(kTable, state_, Input::kMarkerRecorded) : std::nullopt;
  if (!to) {
    return nondeterminism::refused(
        e, "local activity " + std::to_string(seq_) + " '" + request_.activity_type().name() + "'", name(state_));
  }
  state_ = *to;
  return std::nullopt;
}

}  // namespace reprise::worker
