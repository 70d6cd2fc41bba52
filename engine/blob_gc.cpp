// Blob garbage collection: a thread of its own that, every blob_gc_interval,
// removes the blobs no run references any more and the uploads abandoned,
// once past their grace. The blob store deletes them a batch per short
// transaction through the store's writer, so timers keep firing and commits
// keep going while a collection of many blobs runs; a shutdown stops it
// between two batches.
#include "engine/engine.hpp"
#include "engine/log.hpp"
#include "engine/thread_name.hpp"

namespace reprise::engine {

void Engine::start_blob_gc() {
  blob_gc_thread_ = std::thread([this] {
    name_this_thread("blob-gc");
    blob_gc_loop();
  });
}

void Engine::stop_blob_gc() {
  {
    std::lock_guard lock(blob_gc_mu_);
    blob_gc_stopping_ = true;
  }
  blob_gc_cv_.notify_all();
  if (blob_gc_thread_.joinable()) blob_gc_thread_.join();  // a collection in progress stops at its next batch
}

void Engine::blob_gc_loop() {
  // An interval of 0 (tests) collects every 10 ms rather than spinning.
  const auto interval = std::max<std::chrono::milliseconds>(options_.blob_gc_interval, std::chrono::milliseconds(10));
  std::unique_lock lock(blob_gc_mu_);
  while (true) {
    blob_gc_cv_.wait_for(lock, interval, [this] { return blob_gc_stopping_; });
    if (blob_gc_stopping_) return;
    lock.unlock();
    collect_blob_garbage();
    lock.lock();
  }
}

void Engine::collect_blob_garbage() {
  Result<GcStats> gc = store_.blobs().collect_garbage(options_.blob_gc_grace, [this] {
    std::lock_guard lock(blob_gc_mu_);
    return blob_gc_stopping_;
  });
  if (!gc) {
    log::error("blob garbage collection failed", {{"error", gc.status().to_string()}});
  } else if (gc->blobs_deleted > 0 || gc->uploads_abandoned > 0) {
    log::info("blob garbage collected", {{"blobs", std::to_string(gc->blobs_deleted)},
                                         {"bytes", std::to_string(gc->bytes_freed)},
                                         {"abandoned_uploads", std::to_string(gc->uploads_abandoned)}});
  }
}

}  // namespace reprise::engine
