#include "engine/store/blob_store.hpp"

namespace reprise::engine {

Result<BlobInfo> BlobStore::put(std::string_view bytes, const std::string& namespace_id) {
  Result<std::unique_ptr<BlobWriter>> writer = begin_put(namespace_id);
  if (!writer) return writer.status();
  REPRISE_RETURN_IF_ERROR((*writer)->write(bytes));
  return (*writer)->finish();
}

Result<std::string> BlobStore::get(const history::Sha256Digest& sha256, const std::string& namespace_id,
                                   int64_t max_bytes) {
  Result<std::unique_ptr<BlobReader>> reader = open(sha256, namespace_id);
  if (!reader) return reader.status();
  if ((*reader)->size() > max_bytes) {
    return Status::resource_exhausted("blob " + history::to_hex(sha256) + " has " + std::to_string((*reader)->size()) +
                                      " bytes, more than the " + std::to_string(max_bytes) + " asked for");
  }
  std::string out;
  out.reserve(static_cast<size_t>((*reader)->size()));
  while (true) {
    Result<std::string> chunk = (*reader)->next_chunk();
    if (!chunk) return chunk.status();
    if (chunk->empty()) break;
    out += *chunk;
  }
  return out;
}

Status BlobStore::upload_abandoned() {
  return Status::aborted("blob upload was collected as abandoned before it finished");
}

Status BlobStore::not_in_namespace(const history::Sha256Digest& sha256, const std::string& namespace_id) {
  return Status::not_found("blob " + history::to_hex(sha256) + " is not in the blob store of namespace '" +
                           namespace_id + "'");
}

}  // namespace reprise::engine
