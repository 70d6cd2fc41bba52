#include "reprise/detail/blobs.hpp"

#include "history/payload.hpp"
#include "reprise/client.hpp"

namespace reprise::detail {

void Blobs::store(v1::Payload& payload) {
  if (history::is_claim_check(payload)) return;
  const std::string bytes = history::make_claim_check(payload);
  const v1::PutPayloadResponse stored = connection_.put_payload(bytes);
  if (stored.sha256() != payload.external().sha256()) {
    throw PayloadError("the server stored an upload under a different sha256: the bytes were damaged in transit");
  }
}

void Blobs::offload(v1::Payload& payload) {
  if (!history::is_claim_check(payload) && payload.data().size() >= options_.upload_threshold) store(payload);
}

void Blobs::offload(v1::Payloads& payloads) {
  for (v1::Payload& p : *payloads.mutable_payloads()) offload(p);
}

void Blobs::offload(v1::Command& c) {
  switch (c.attributes_case()) {
    case v1::Command::kScheduleActivityTask:
      return offload(*c.mutable_schedule_activity_task()->mutable_input());
    case v1::Command::kCompleteWorkflowExecution:
      return offload(*c.mutable_complete_workflow_execution()->mutable_result());
    case v1::Command::kStartChildWorkflowExecution:
      return offload(*c.mutable_start_child_workflow_execution()->mutable_input());
    case v1::Command::kContinueAsNewWorkflowExecution:
      return offload(*c.mutable_continue_as_new_workflow_execution()->mutable_input());
    case v1::Command::kSignalExternalWorkflowExecution:
      return offload(*c.mutable_signal_external_workflow_execution()->mutable_input());
    case v1::Command::kRecordMarker:
      for (auto& [key, value] : *c.mutable_record_marker()->mutable_details()) offload(value);
      return;
    default:
      return;
  }
}

v1::Payload Blobs::resolve(const v1::Payload& payload) {
  if (!history::is_claim_check(payload)) return payload;
  std::shared_ptr<const std::string> bytes = fetch(payload.external().sha256());
  v1::Payload out = payload;
  if (Status s = history::resolve_claim_check(out, *bytes); !s) {
    throw PayloadError("claim-check " + history::summarize(payload) + ": " + s.message());
  }
  return out;
}

std::shared_ptr<const std::string> Blobs::fetch(const std::string& sha256) {
  {
    std::lock_guard lock(mu_);
    if (auto it = cache_.find(sha256); it != cache_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second.second);
      return it->second.first;
    }
  }
  std::shared_ptr<const std::string> bytes;
  try {
    bytes = std::make_shared<const std::string>(connection_.get_payload(sha256));
  } catch (const Error& e) {
    throw PayloadError(std::string("cannot fetch a claim-check payload: ") + e.what());
  }
  if (bytes->size() > options_.cache_bytes) return bytes;
  std::lock_guard lock(mu_);
  if (cache_.contains(sha256)) return bytes;  // another thread fetched it meanwhile
  lru_.push_front(sha256);
  cache_[sha256] = {bytes, lru_.begin()};
  cached_bytes_ += bytes->size();
  while (cached_bytes_ > options_.cache_bytes) {
    auto last = cache_.find(lru_.back());
    cached_bytes_ -= last->second.first->size();
    cache_.erase(last);
    lru_.pop_back();
  }
  return bytes;
}

}  // namespace reprise::detail
