#include "history/payload.hpp"

#include <cstdio>

namespace reprise::history {

namespace {
std::string human_bytes(int64_t n) {
  char buf[32];
  if (n < 1024) {
    std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(n));
  } else if (n < (1 << 20)) {
    std::snprintf(buf, sizeof buf, "%.1f KiB", static_cast<double>(n) / 1024);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(n) / (1 << 20));
  }
  return buf;
}

std::string_view metadata_value(const v1::Payload& payload, std::string_view key) {
  auto it = payload.metadata().find(std::string(key));
  return it == payload.metadata().end() ? std::string_view() : std::string_view(it->second);
}
}  // namespace

v1::Payload make_payload(std::string_view encoding, std::string data) {
  v1::Payload p;
  (*p.mutable_metadata())[std::string(kEncodingKey)] = std::string(encoding);
  p.set_data(std::move(data));
  return p;
}

std::string_view payload_encoding(const v1::Payload& payload) { return metadata_value(payload, kEncodingKey); }

bool is_compressed(const v1::Payload& payload) { return metadata_value(payload, kCompressionKey) == kCompressionZstd; }

bool is_claim_check(const v1::Payload& payload) { return payload.has_external(); }

Status compress_if_large(v1::Payload& payload, size_t threshold, ZstdCodec& zstd) {
  if (is_claim_check(payload) || is_compressed(payload) || payload.data().size() < threshold) return Status::ok();
  std::string compressed;
  REPRISE_RETURN_IF_ERROR(zstd.compress(payload.data(), compressed));
  if (compressed.size() >= payload.data().size()) return Status::ok();
  payload.set_data(std::move(compressed));
  (*payload.mutable_metadata())[std::string(kCompressionKey)] = std::string(kCompressionZstd);
  return Status::ok();
}

Result<std::string> uncompressed_data(const v1::Payload& payload, ZstdCodec& zstd) {
  if (is_claim_check(payload))
    return Status::failed_precondition("payload is a claim-check reference; resolve it first");
  if (!is_compressed(payload)) return payload.data();
  return zstd.decompress(payload.data());
}

std::string make_claim_check(v1::Payload& payload) {
  std::string bytes = std::move(*payload.mutable_data());
  payload.clear_data();
  auto* ref = payload.mutable_external();
  ref->set_sha256(std::string(as_bytes(Sha256::digest(bytes))));
  ref->set_size(static_cast<int64_t>(bytes.size()));
  ref->set_encoding(std::string(payload_encoding(payload)));
  return bytes;
}

Status resolve_claim_check(v1::Payload& payload, std::string bytes) {
  if (!is_claim_check(payload)) return Status::failed_precondition("payload is not a claim-check reference");
  const auto& ref = payload.external();
  if (static_cast<int64_t>(bytes.size()) != ref.size()) {
    return Status::data_loss("claim-check blob has " + std::to_string(bytes.size()) + " bytes, reference says " +
                             std::to_string(ref.size()));
  }
  if (as_bytes(Sha256::digest(bytes)) != ref.sha256()) {
    return Status::data_loss("claim-check blob does not match its sha256");
  }
  payload.clear_external();
  payload.set_data(std::move(bytes));
  return Status::ok();
}

std::string summarize(const v1::Payload& payload) {
  if (is_claim_check(payload)) {
    Sha256Digest d{};
    std::string hash = digest_from_bytes(payload.external().sha256(), d) ? to_hex(d).substr(0, 12) : "?";
    return "claim-check sha256:" + hash + " " + human_bytes(payload.external().size()) + " " +
           payload.external().encoding();
  }
  std::string s(payload_encoding(payload).empty() ? "unknown" : payload_encoding(payload));
  s += " " + human_bytes(static_cast<int64_t>(payload.data().size()));
  if (is_compressed(payload)) s += " zstd";
  return s;
}

}  // namespace reprise::history
