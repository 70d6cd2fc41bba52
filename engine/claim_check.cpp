#include "engine/claim_check.hpp"

#include <cstdio>
#include <mutex>
#include <unordered_map>

#include "history/payload.hpp"
#include "reprise/internal/state.pb.h"
#include "reprise/v1/common.pb.h"
#include "reprise/v1/service.pb.h"

namespace reprise::engine {

namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;

// Whether messages of `type` can hold a v1::Payload anywhere inside, so the
// walks skip the many that cannot. Decided once per type, over every type
// reachable from it (a fixed point, since types may be recursive).
bool may_hold_payload(const Descriptor* type) {
  static std::mutex mu;
  static std::unordered_map<const Descriptor*, bool> known;
  std::lock_guard lock(mu);
  if (auto it = known.find(type); it != known.end()) return it->second;
  std::vector<const Descriptor*> reachable{type};
  std::unordered_map<const Descriptor*, bool> holds{{type, type == v1::Payload::descriptor()}};
  for (size_t i = 0; i < reachable.size(); ++i) {
    for (int f = 0; f < reachable[i]->field_count(); ++f) {
      const FieldDescriptor* field = reachable[i]->field(f);
      if (field->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) continue;
      const Descriptor* d = field->message_type();
      if (holds.emplace(d, d == v1::Payload::descriptor()).second) reachable.push_back(d);
    }
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (const Descriptor* d : reachable) {
      if (holds[d]) continue;
      for (int f = 0; f < d->field_count(); ++f) {
        const FieldDescriptor* field = d->field(f);
        if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE && holds[field->message_type()]) {
          holds[d] = changed = true;
          break;
        }
      }
    }
  }
  known.insert(holds.begin(), holds.end());
  return holds[type];
}

// Map fields are walked through their typed accessors: protobuf's reflection
// reaches a map's entries only through a repeated-field view that it
// re-synchronises behind the scenes, which is not safe to mutate through.
// Every map that can hold a payload is listed here; a new one fails loudly.
template <typename M, typename Visit>
Status visit_map_values(M& message, const FieldDescriptor* field, const Visit& visit) {
  if constexpr (!std::is_const_v<M>) {
    if (auto* marker = dynamic_cast<v1::RecordMarkerCommandAttributes*>(&message)) {
      for (auto& [key, value] : *marker->mutable_details()) REPRISE_RETURN_IF_ERROR(visit(value));
      return Status::ok();
    }
    if (auto* completion = dynamic_cast<v1::CompleteWorkflowTaskRequest*>(&message)) {
      for (auto& [key, value] : *completion->mutable_query_results()) REPRISE_RETURN_IF_ERROR(visit(value));
      return Status::ok();
    }
  } else {
    if (auto* marker = dynamic_cast<const v1::MarkerRecordedEventAttributes*>(&message)) {
      for (const auto& [key, value] : marker->details()) REPRISE_RETURN_IF_ERROR(visit(value));
      return Status::ok();
    }
    if (auto* marker = dynamic_cast<const v1::RecordMarkerCommandAttributes*>(&message)) {
      for (const auto& [key, value] : marker->details()) REPRISE_RETURN_IF_ERROR(visit(value));
      return Status::ok();
    }
    if (auto* state = dynamic_cast<const internal::ExecutionState*>(&message)) {
      for (const auto& [key, value] : state->activities()) REPRISE_RETURN_IF_ERROR(visit(value));
      return Status::ok();
    }
  }
  return Status::internal("claim-check does not know how to walk map field " + field->full_name());
}

template <typename Visit>
Status visit_payloads(Message& m, const Visit& visit) {
  if (m.GetDescriptor() == v1::Payload::descriptor()) return visit(static_cast<v1::Payload&>(m));
  const auto* reflection = m.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  reflection->ListFields(m, &fields);
  for (const FieldDescriptor* f : fields) {
    if (f->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE || !may_hold_payload(f->message_type())) continue;
    if (f->is_map()) {
      REPRISE_RETURN_IF_ERROR(visit_map_values(m, f, [&](Message& value) { return visit_payloads(value, visit); }));
    } else if (f->is_repeated()) {
      for (int i = 0; i < reflection->FieldSize(m, f); ++i) {
        REPRISE_RETURN_IF_ERROR(visit_payloads(*reflection->MutableRepeatedMessage(&m, f, i), visit));
      }
    } else {
      REPRISE_RETURN_IF_ERROR(visit_payloads(*reflection->MutableMessage(&m, f), visit));
    }
  }
  return Status::ok();
}

template <typename Visit>
Status visit_payloads(const Message& m, const Visit& visit) {
  if (m.GetDescriptor() == v1::Payload::descriptor()) return visit(static_cast<const v1::Payload&>(m));
  const auto* reflection = m.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  reflection->ListFields(m, &fields);
  for (const FieldDescriptor* f : fields) {
    if (f->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE || !may_hold_payload(f->message_type())) continue;
    if (f->is_map()) {
      REPRISE_RETURN_IF_ERROR(
          visit_map_values(m, f, [&](const Message& value) { return visit_payloads(value, visit); }));
    } else if (f->is_repeated()) {
      for (int i = 0; i < reflection->FieldSize(m, f); ++i) {
        REPRISE_RETURN_IF_ERROR(visit_payloads(reflection->GetRepeatedMessage(m, f, i), visit));
      }
    } else {
      REPRISE_RETURN_IF_ERROR(visit_payloads(reflection->GetMessage(m, f), visit));
    }
  }
  return Status::ok();
}

Status collect(const Message& m, std::vector<history::Sha256Digest>& out) {
  return visit_payloads(m, [&](const v1::Payload& p) {
    history::Sha256Digest digest{};
    if (history::is_claim_check(p) && history::digest_from_bytes(p.external().sha256(), digest)) {
      out.push_back(digest);
    }
    return Status::ok();
  });
}

std::string mib(int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1024 * 1024));
  return text;
}

}  // namespace

Result<bool> ClaimCheck::offload(google::protobuf::Message& request, const std::string& namespace_id) {
  bool referenced = false;
  Status s = visit_payloads(request, [&](v1::Payload& p) -> Status {
    if (history::is_claim_check(p)) {
      history::Sha256Digest digest{};
      if (!history::digest_from_bytes(p.external().sha256(), digest)) {
        return Status::invalid_argument("a claim-check reference has a malformed sha256 (must be 32 bytes)");
      }
      Result<BlobInfo> info = blobs_.stat(digest, namespace_id);
      if (!info) {
        if (info.status().code() != StatusCode::kNotFound) return info.status();
        return Status::invalid_argument("a payload references blob sha256:" + history::to_hex(digest) +
                                        ", which namespace '" + namespace_id +
                                        "' does not have (upload it there with PutPayload first)");
      }
      if (info->size != p.external().size()) {
        return Status::invalid_argument("a claim-check reference says " + std::to_string(p.external().size()) +
                                        " bytes, but blob sha256:" + history::to_hex(digest) + " has " +
                                        std::to_string(info->size));
      }
      referenced = true;
      return Status::ok();
    }
    if (p.data().size() < options_.threshold) return Status::ok();
    if (static_cast<int64_t>(p.data().size()) > options_.blob_limit) {
      return Status::invalid_argument("a payload of " + mib(static_cast<int64_t>(p.data().size())) +
                                      " is over the blob limit of " + mib(options_.blob_limit));
    }
    std::string bytes = history::make_claim_check(p);
    Result<std::unique_ptr<BlobWriter>> writer = blobs_.begin_put(namespace_id);
    if (!writer) return writer.status();
    REPRISE_RETURN_IF_ERROR((*writer)->write(bytes));
    Result<BlobInfo> stored = (*writer)->finish();
    if (!stored) return stored.status();
    referenced = true;
    return Status::ok();
  });
  if (!s) return s;
  return referenced;
}

bool ClaimCheck::touches_blob_store(const google::protobuf::Message& request) const {
  bool touches = false;
  // A map this walk does not know fails it: then assume the store is touched.
  Status walked = visit_payloads(request, [&](const v1::Payload& p) {
    touches |= history::is_claim_check(p) || p.data().size() >= options_.threshold;
    return Status::ok();
  });
  return touches || !walked.is_ok();
}

Status collect_claim_checks(const google::protobuf::Message& message, std::vector<history::Sha256Digest>& out) {
  return collect(message, out);
}

}  // namespace reprise::engine
