// Linked only in a ThreadSanitizer build, next to absl_sync.cpp and into the
// same processes (tsan_absl_sync_dep in the top meson.build). Nowhere else.
//
// A gRPC operation is started on one thread (grpc_call_start_batch, with a
// tag) and completed on another (grpc_cq_end_op, with the same tag), which
// runs a callback call's completion (the tag is a grpcpp
// CallbackWithStatusTag or CallbackWithSuccessTag) or hands the tag to the
// thread that waits on the completion queue. What orders the two is inside
// libgrpc (its call combiner and closures, lock-free), which is not built
// with TSan, so TSan saw everything written before the start as racing with
// everything read in the completion: a forwarding node's grpc::ClientContext
// and the client call's tag, our completion callbacks' captures and the
// state they lock (engine/server/grpc_service.cpp), a server reactor's
// Finish on the engine's executor against the callback that completes it.
// gRPC guarantees that order (a completion comes after its start), so the
// process defines both functions, tells TSan that the start releases the tag
// and the completion acquires it, and calls the real ones in libgrpc
// (dlsym RTLD_NEXT; libgrpc++ and libgrpc itself call them through the
// PLT, so the executable's definitions come first). A completion queue
// hands the tag to the thread that takes it (grpc_completion_queue_next or
// _pluck) through a lock-free queue, and Debian's libgrpc++ runs callback
// calls' completions on such threads (its CallbackAlternativeCQ), so the
// taking thread acquires the tag too; a callback that runs elsewhere is
// handed over under gRPC's absl::Mutex, which absl_sync.cpp makes visible.
#include <dlfcn.h>
#include <sanitizer/tsan_interface.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>

namespace {

template <typename Fn>
Fn real_grpc_function(const char* name) {
  void* fn = dlsym(RTLD_NEXT, name);
  if (fn == nullptr) {
    std::fprintf(stderr, "tsan_grpc_batch_sync: %s is not in the loaded libgrpc\n", name);
    std::abort();
  }
  return reinterpret_cast<Fn>(fn);
}

// grpc_event and gpr_timespec as <grpc/grpc.h> lays them out (both are
// returned or passed in two registers).
struct GrpcEventRep {
  int type;  // GRPC_OP_COMPLETE: the tag is an operation's
  int success;
  void* tag;
};
constexpr int kGrpcOpComplete = 2;
struct GprTimespecRep {
  long long tv_sec;
  int tv_nsec;
  int clock_type;
};

GrpcEventRep taken(GrpcEventRep event) {
  if (event.type == kGrpcOpComplete && event.tag != nullptr) __tsan_acquire(event.tag);
  return event;
}

}  // namespace

// grpc_call_start_batch and grpc_completion_queue_next/_pluck are C;
// grpc_cq_end_op is C++, its mangled name that of
// Debian 12's libgrpc (absl::Status in the inline namespace debian3). Its
// absl::Status argument is not trivially copyable, so the ABI passes it by
// address, and the caller destroys it: passing the address on is exact.
#define REPRISE_GRPC_START_BATCH "grpc_call_start_batch"
#define REPRISE_GRPC_CQ_NEXT "grpc_completion_queue_next"
#define REPRISE_GRPC_CQ_PLUCK "grpc_completion_queue_pluck"
#define REPRISE_GRPC_CQ_END_OP \
  "_Z14grpc_cq_end_opP21grpc_completion_queuePvN4absl7debian36StatusEPFvS1_P18grpc_cq_completionES1_S6_b"

extern "C" {

__attribute__((visibility("default"))) int reprise_grpc_call_start_batch(
    void* call, const void* ops, std::size_t nops, void* tag, void* reserved) __asm__(REPRISE_GRPC_START_BATCH);
__attribute__((visibility("default"))) void reprise_grpc_cq_end_op(void* cq, void* tag, void* status, void* done,
                                                                   void* done_arg, void* storage,
                                                                   bool internal) __asm__(REPRISE_GRPC_CQ_END_OP);
__attribute__((visibility("default"))) GrpcEventRep reprise_grpc_cq_next(void* cq, GprTimespecRep deadline,
                                                                         void* reserved) __asm__(REPRISE_GRPC_CQ_NEXT);
__attribute__((visibility("default"))) GrpcEventRep reprise_grpc_cq_pluck(
    void* cq, void* tag, GprTimespecRep deadline, void* reserved) __asm__(REPRISE_GRPC_CQ_PLUCK);

int reprise_grpc_call_start_batch(void* call, const void* ops, std::size_t nops, void* tag, void* reserved) {
  using Fn = int (*)(void*, const void*, std::size_t, void*, void*);
  static const auto real = real_grpc_function<Fn>(REPRISE_GRPC_START_BATCH);
  if (tag != nullptr) __tsan_release(tag);
  return real(call, ops, nops, tag, reserved);
}

void reprise_grpc_cq_end_op(void* cq, void* tag, void* status, void* done, void* done_arg, void* storage,
                            bool internal) {
  using Fn = void (*)(void*, void*, void*, void*, void*, void*, bool);
  static const auto real = real_grpc_function<Fn>(REPRISE_GRPC_CQ_END_OP);
  if (tag != nullptr) __tsan_acquire(tag);
  real(cq, tag, status, done, done_arg, storage, internal);
}

GrpcEventRep reprise_grpc_cq_next(void* cq, GprTimespecRep deadline, void* reserved) {
  using Fn = GrpcEventRep (*)(void*, GprTimespecRep, void*);
  static const auto real = real_grpc_function<Fn>(REPRISE_GRPC_CQ_NEXT);
  return taken(real(cq, deadline, reserved));
}

GrpcEventRep reprise_grpc_cq_pluck(void* cq, void* tag, GprTimespecRep deadline, void* reserved) {
  using Fn = GrpcEventRep (*)(void*, void*, GprTimespecRep, void*);
  static const auto real = real_grpc_function<Fn>(REPRISE_GRPC_CQ_PLUCK);
  return taken(real(cq, tag, deadline, reserved));
}

}  // extern "C"
