// Counting the memory of coroutine frames per workflow: a workflow's
// coroutines (Workflow, Task, branches) allocate their frames through
// allocate_frame, which charges the account the runtime set while it runs
// that workflow's code. The worker's cache uses the total to stay within
// its byte bound; each frame remembers its account, so it is credited back
// wherever it is freed.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>

#include "reprise/export.hpp"

namespace reprise::detail {

struct FrameAccount {
  std::atomic<int64_t> bytes{0};
};

// Set by the runtime around the code of one workflow; null elsewhere. Exported:
// user code and the library must share the one variable.
REPRISE_EXPORT inline thread_local FrameAccount* current_frame_account = nullptr;

// Room for the account pointer before the frame, keeping the frame aligned
// as operator new would.
inline constexpr size_t kFrameHeader = alignof(std::max_align_t);

inline void* allocate_frame(size_t size) {
  FrameAccount* account = current_frame_account;
  char* block = static_cast<char*>(::operator new(size + kFrameHeader));
  *reinterpret_cast<FrameAccount**>(block) = account;
  if (account != nullptr) account->bytes += static_cast<int64_t>(size + kFrameHeader);
  return block + kFrameHeader;
}

inline void free_frame(void* frame, size_t size) {
  char* block = static_cast<char*>(frame) - kFrameHeader;
  FrameAccount* account = *reinterpret_cast<FrameAccount**>(block);
  if (account != nullptr) account->bytes -= static_cast<int64_t>(size + kFrameHeader);
  ::operator delete(block);
}

// Charges frames made while it lives to `account`.
class ChargeFramesTo {
 public:
  explicit ChargeFramesTo(FrameAccount& account) : previous_(current_frame_account) {
    current_frame_account = &account;
  }
  ~ChargeFramesTo() { current_frame_account = previous_; }
  ChargeFramesTo(const ChargeFramesTo&) = delete;

 private:
  FrameAccount* previous_;
};

}  // namespace reprise::detail
