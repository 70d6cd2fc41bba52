#include "history/batch_codec.hpp"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/unknown_field_set.h>

#include <limits>

#include "history/stored_proto.hpp"

namespace reprise::history {

namespace {
bool merge_bytes(std::string_view bytes, v1::History& out) { return merge_stored(bytes, out); }

constexpr char kFormatPlain = 0x01;
// History.events: field 1, wire type 2 (length-delimited).
constexpr uint32_t kHistoryEventsTag = (1 << 3) | 2;
constexpr char kFormatZstd = 0x02;

Status check_consecutive(const v1::History& h, int first_index) {
  for (int i = first_index + 1; i < h.events_size(); ++i) {
    // Nothing follows the largest id (and adding one to it would overflow).
    const int64_t previous = h.events(i - 1).event_id();
    if (previous == std::numeric_limits<int64_t>::max() || h.events(i).event_id() != previous + 1) {
      return Status::data_loss("event batch is not consecutive: event " + std::to_string(h.events(i - 1).event_id()) +
                               " is followed by " + std::to_string(h.events(i).event_id()));
    }
  }
  return Status::ok();
}
}  // namespace

EventBatchCodec::EventBatchCodec(BatchCodecOptions options) : options_(options), zstd_(options.zstd) {}

Result<std::string> EventBatchCodec::encode(std::span<const v1::HistoryEvent> events) { return encode_events(events); }

Result<std::string> EventBatchCodec::encode(const v1::History& history) { return encode_events(history.events()); }

// Serializes the events straight into the wire form of a History (field 1,
// length-delimited, per event) without copying them into one first.
template <typename Events>
Result<std::string> EventBatchCodec::encode_events(const Events& events) {
  if (events.empty()) return Status::invalid_argument("an event batch needs at least one event");
  int64_t previous_id = 0;
  scratch_.clear();
  {
    google::protobuf::io::StringOutputStream stream(&scratch_);
    google::protobuf::io::CodedOutputStream out(&stream);
    for (const v1::HistoryEvent& e : events) {
      if (previous_id != 0 && e.event_id() != previous_id + 1) {
        return Status::data_loss("cannot encode: event batch is not consecutive: event " + std::to_string(previous_id) +
                                 " is followed by " + std::to_string(e.event_id()));
      }
      previous_id = e.event_id();
      out.WriteTag(kHistoryEventsTag);
      out.WriteVarint32(static_cast<uint32_t>(e.ByteSizeLong()));
      e.SerializeWithCachedSizes(&out);
    }
  }
  std::string out;
  if (scratch_.size() < options_.compress_threshold) {
    out.reserve(scratch_.size() + 1);
    out.push_back(kFormatPlain);
    out += scratch_;
    return out;
  }
  out.push_back(kFormatZstd);
  REPRISE_RETURN_IF_ERROR(zstd_.compress(scratch_, out));
  return out;
}

Status EventBatchCodec::decode(std::string_view encoded, v1::History& out) {
  if (encoded.empty()) return Status::data_loss("empty event batch");
  const char format = encoded.front();
  const std::string_view body = encoded.substr(1);
  const int first_new = out.events_size();
  Status status = merge(format, body, out);
  if (status.is_ok() && out.events_size() == first_new) status = Status::data_loss("event batch holds no events");
  // Continuity is checked across the boundary with events already in `out` too.
  if (status.is_ok()) status = check_consecutive(out, first_new > 0 ? first_new - 1 : 0);
  if (!status.is_ok()) out.mutable_events()->DeleteSubrange(first_new, out.events_size() - first_new);
  // A batch is its events: fields of History other than `events` that the
  // bytes carried (never written by encode) are dropped, not kept to vanish
  // the next time the events are encoded.
  out.GetReflection()->MutableUnknownFields(&out)->Clear();
  return status;
}

Status EventBatchCodec::merge(char format, std::string_view body, v1::History& out) {
  if (format == kFormatPlain) {
    if (!merge_bytes(body, out)) return Status::data_loss("event batch does not parse as History");
    return Status::ok();
  }
  if (format == kFormatZstd) {
    Result<std::string> raw = zstd_.decompress(body);
    if (!raw) return raw.status().with_context("event batch");
    if (!merge_bytes(*raw, out)) return Status::data_loss("decompressed event batch does not parse as History");
    return Status::ok();
  }
  return Status::data_loss("unknown event batch format byte " + std::to_string(static_cast<unsigned char>(format)));
}

}  // namespace reprise::history
