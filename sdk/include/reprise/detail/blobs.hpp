// Large payloads and the server's blob store, for the worker and the
// client: uploading big payloads before they are sent (the request then
// carries a claim-check reference), and fetching the bytes of a reference
// when code reads it, through a cache bounded by bytes.
//
// Thread safety: all members may be called from any thread.
#pragma once

#include <cstddef>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "reprise/export.hpp"
#include "reprise/v1/command.pb.h"
#include "reprise/v1/common.pb.h"

namespace reprise {
class Connection;
}

namespace reprise::detail {

struct BlobOptions {
  // Payloads at least this large are uploaded by PutPayload rather than sent
  // inline (the server would move them to its blob store anyway; uploading
  // keeps requests far below the 64 MiB message limit).
  size_t upload_threshold = 1 << 20;
  // Fetched blobs kept for the next reader; 0 keeps none.
  size_t cache_bytes = 64 << 20;
};

class REPRISE_EXPORT Blobs {
 public:
  Blobs(Connection& connection, BlobOptions options) : connection_(connection), options_(options) {}

  // Uploads `payload` and turns it into its claim-check reference.
  void store(v1::Payload& payload);
  // Uploads the payloads at least upload_threshold large.
  void offload(v1::Payload& payload);
  void offload(v1::Payloads& payloads);
  // The payloads of every command that can carry a large one.
  void offload(v1::Command& command);

  // `payload` with a claim-check's bytes back inline, checked against the
  // reference's hash and size. Throws PayloadError when the bytes cannot be
  // had or do not match.
  v1::Payload resolve(const v1::Payload& payload);

 private:
  std::shared_ptr<const std::string> fetch(const std::string& sha256);

  Connection& connection_;
  BlobOptions options_;
  std::mutex mu_;
  std::list<std::string> lru_;  // sha256s, most recent first
  std::map<std::string, std::pair<std::shared_ptr<const std::string>, std::list<std::string>::iterator>> cache_;
  size_t cached_bytes_ = 0;
};

}  // namespace reprise::detail
