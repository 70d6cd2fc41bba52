// Parsing records the store wrote.
//
// Requests are bounded on the way in (a failure chain is cut at 32 causes),
// but records written before that bound existed can nest deeper than
// protobuf's default parse limit of 100; they must still load, or their
// workflow could never be read, described or terminated again.
#pragma once

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/message.h>

#include <string_view>

namespace reprise::history {

inline constexpr int kStoredRecursionLimit = 4096;

// Merges `bytes` into `out`; false when they do not parse.
inline bool merge_stored(std::string_view bytes, google::protobuf::Message& out) {
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()),
                                            static_cast<int>(bytes.size()));
  in.SetRecursionLimit(kStoredRecursionLimit);
  return out.MergeFromCodedStream(&in) && in.ConsumedEntireMessage();
}

inline bool parse_stored(std::string_view bytes, google::protobuf::Message& out) {
  out.Clear();
  return merge_stored(bytes, out);
}

}  // namespace reprise::history
