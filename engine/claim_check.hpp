// Claim-check on the way in: payloads at least as large as the threshold
// (128 KiB by default) are moved to the blob store before the request is
// applied, so history holds a small reference instead of the bytes. A
// reference the caller made itself (after PutPayload) is checked against the
// blob store. Whatever the request ends up referencing, the transition that
// records it also records a BlobReference, which keeps the blob alive.
//
// Thread safety: offload() may be called from any thread.
#pragma once

#include <google/protobuf/message.h>

#include <cstdint>
#include <string>
#include <vector>

#include "engine/store/blob_store.hpp"
#include "history/sha256.hpp"

namespace reprise::engine {

struct ClaimCheckOptions {
  size_t threshold = 128 * 1024;
  int64_t blob_limit = int64_t{1} << 30;  // no payload may be larger
};

class ClaimCheck {
 public:
  ClaimCheck(BlobStore& blobs, ClaimCheckOptions options) : blobs_(blobs), options_(options) {}

  // Moves large inline payloads of `request` into the blob store of
  // `namespace_id` and checks that the references it already holds are
  // there (a blob of another namespace is not). Returns whether `request`
  // now holds any claim-check reference.
  Result<bool> offload(google::protobuf::Message& request, const std::string& namespace_id);
  // Whether offload() would read or write the blob store for `request`: it
  // holds a claim-check reference or a payload at the threshold or above.
  bool touches_blob_store(const google::protobuf::Message& request) const;

  const ClaimCheckOptions& options() const { return options_; }

 private:
  BlobStore& blobs_;
  ClaimCheckOptions options_;
};

// The digests of every claim-check reference inside `message`.
Status collect_claim_checks(const google::protobuf::Message& message, std::vector<history::Sha256Digest>& out);

}  // namespace reprise::engine
