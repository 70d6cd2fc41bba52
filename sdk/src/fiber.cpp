#include "reprise/detail/fiber.hpp"

#include <cxxabi.h>

#include <boost/context/fiber.hpp>
#include <boost/context/fixedsize_stack.hpp>
#include <boost/context/preallocated.hpp>
#include <boost/context/protected_fixedsize_stack.hpp>

#include "reprise/detail/frame_account.hpp"

// Sanitizers must be told when the stack changes under them (Boost 1.74's
// fiber does not do it for fcontext).
#if defined(__SANITIZE_ADDRESS__)
#define REPRISE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define REPRISE_ASAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define REPRISE_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define REPRISE_TSAN 1
#endif
#endif
#if REPRISE_ASAN
#include <sanitizer/asan_interface.h>
#endif
#if REPRISE_TSAN
#include <sanitizer/tsan_interface.h>
#endif

namespace reprise::detail {

namespace bctx = boost::context;

namespace {

// The C++ runtime keeps the exceptions being handled (what a `catch` block
// holds, what std::current_exception() returns) and std::uncaught_exceptions()
// per thread. Code on a fiber may wait inside a catch block and resume on
// another pool thread, so each fiber keeps its own copy, installed while it
// runs. The layout is the Itanium C++ ABI's (libstdc++ and libc++abi alike).
struct ExceptionState {
  void* caught_exceptions = nullptr;
  unsigned int uncaught_exceptions = 0;
};
#if defined(__arm__)
#error "the ARM EH ABI has another __cxa_eh_globals layout"
#endif

ExceptionState* thread_exception_state() { return reinterpret_cast<ExceptionState*>(abi::__cxa_get_globals()); }

}  // namespace

struct Fiber::State {
  std::function<void()> body;
  bctx::fiber fiber;   // the suspended fiber, while the caller runs
  bctx::fiber caller;  // the suspended caller, while the fiber runs
  bool finished = false;
  bool unwinding = false;
  std::exception_ptr error;
  FrameAccount* account = nullptr;  // charged with stack_size, like a coroutine frame
  // Stack bounds for AddressSanitizer: the fiber's, and its caller's (a
  // different pool thread's stack from one activation to the next).
  const void* stack_bottom = nullptr;
  size_t stack_size = 0;
  const void* caller_bottom = nullptr;
  size_t caller_size = 0;
  void* fake_stack = nullptr;
  ExceptionState exceptions;  // the fiber's own, while it is switched out
#if REPRISE_TSAN
  void* tsan_fiber = nullptr;
  void* tsan_caller = nullptr;
#endif

  // Each switch is bracketed by the sanitizer hooks: start before, finish
  // after landing on the other stack.
  // On the resuming thread, which the fiber runs on until it switches back.
  void switch_into_fiber() {
    ExceptionState* thread_state = thread_exception_state();
    const ExceptionState caller_exceptions = *thread_state;
    *thread_state = exceptions;
#if REPRISE_ASAN
    void* caller_fake = nullptr;
    __sanitizer_start_switch_fiber(&caller_fake, stack_bottom, stack_size);
#endif
#if REPRISE_TSAN
    tsan_caller = __tsan_get_current_fiber();
    __tsan_switch_to_fiber(tsan_fiber, 0);
#endif
    fiber = std::move(fiber).resume();
#if REPRISE_ASAN
    __sanitizer_finish_switch_fiber(caller_fake, nullptr, nullptr);
#endif
    exceptions = *thread_state;
    *thread_state = caller_exceptions;
  }

  void switch_to_caller() {
#if REPRISE_ASAN
    __sanitizer_start_switch_fiber(&fake_stack, caller_bottom, caller_size);
#endif
#if REPRISE_TSAN
    __tsan_switch_to_fiber(tsan_caller, 0);
#endif
    caller = std::move(caller).resume();
    arrived_on_fiber();
  }

  void arrived_on_fiber() {
#if REPRISE_ASAN
    __sanitizer_finish_switch_fiber(fake_stack, &caller_bottom, &caller_size);
#endif
  }

  // The last switch off a stack that is about to be freed.
  void leaving_for_good() {
#if REPRISE_ASAN
    __sanitizer_start_switch_fiber(nullptr, caller_bottom, caller_size);
#endif
#if REPRISE_TSAN
    __tsan_switch_to_fiber(tsan_caller, 0);
#endif
  }
};

namespace {

template <typename Allocator>
bctx::fiber make_fiber(Allocator allocator, Fiber::State* state) {
  bctx::stack_context stack = allocator.allocate();
  state->stack_size = stack.size;
  state->stack_bottom = static_cast<char*>(stack.sp) - stack.size;
  return bctx::fiber(std::allocator_arg, bctx::preallocated(stack.sp, stack.size, stack), allocator,
                     [state](bctx::fiber&& caller) {
                       state->caller = std::move(caller);
                       state->arrived_on_fiber();
                       try {
                         if (!state->unwinding) state->body();  // destroyed before it ever ran
                       } catch (const FiberUnwind&) {
                         // destroyed while waiting: the stack is unwound
                       } catch (...) {
                         state->error = std::current_exception();
                       }
                       state->finished = true;
                       state->leaving_for_good();
                       return std::move(state->caller);
                     });
}

}  // namespace

Fiber::Fiber(StackOptions stack, std::function<void()> body) : state_(std::make_unique<State>()) {
  state_->body = std::move(body);
  state_->fiber = stack.guard_page ? make_fiber(bctx::protected_fixedsize_stack(stack.bytes), state_.get())
                                   : make_fiber(bctx::fixedsize_stack(stack.bytes), state_.get());
  state_->account = current_frame_account;
  if (state_->account != nullptr) state_->account->bytes += static_cast<int64_t>(state_->stack_size);
#if REPRISE_TSAN
  state_->tsan_fiber = __tsan_create_fiber(0);
#endif
}

Fiber::~Fiber() {
  if (state_->fiber) {
    // Started or not, the body has not returned: switch in once more and
    // let suspend() throw FiberUnwind, so the stack's objects are destroyed
    // on the normal path and the stack is freed when the body returns.
    state_->unwinding = true;
    state_->switch_into_fiber();
  }
#if REPRISE_TSAN
  __tsan_destroy_fiber(state_->tsan_fiber);
#endif
  if (state_->account != nullptr) state_->account->bytes -= static_cast<int64_t>(state_->stack_size);
}

bool Fiber::resume() {
  state_->switch_into_fiber();
  return state_->finished;
}

void Fiber::suspend() {
  state_->switch_to_caller();
  if (state_->unwinding) throw FiberUnwind{};
}

std::exception_ptr Fiber::error() const { return state_->error; }

}  // namespace reprise::detail
