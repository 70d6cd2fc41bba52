// A stack of its own for one stackful workflow (or branch), on Boost.Context.
// The pool thread that runs an activation switches onto the stack with
// resume() and comes back when the code on it calls suspend() or returns.
// Boost stays inside fiber.cpp; this header is all the SDK sees.
#pragma once

#include <cstddef>
#include <exception>
#include <functional>
#include <memory>

#include "reprise/export.hpp"

namespace reprise {

// The stack a stackful workflow runs on.
struct StackOptions {
  // Reserved per workflow. Only the pages the code touches become resident.
  size_t bytes = 64 * 1024;
  // An inaccessible page below the stack, so an overflow faults at once
  // instead of overwriting other memory. Each guarded stack is two memory
  // mappings: vm.max_map_count (65530 by default) bounds how many live.
  bool guard_page = true;
};

namespace detail {

// Thrown on a fiber's stack when the fiber is destroyed before its code has
// returned (a cached workflow evicted while it waits), so the objects on the
// stack are destroyed. Code that catches everything must rethrow it.
struct REPRISE_EXPORT FiberUnwind {};

class REPRISE_EXPORT Fiber {
 public:
  Fiber(StackOptions stack, std::function<void()> body);
  // Unwinds the stack of a fiber whose body has not returned.
  ~Fiber();
  Fiber(const Fiber&) = delete;
  Fiber& operator=(const Fiber&) = delete;

  // Runs the body on the fiber's stack until it calls suspend() or returns.
  // True once it has returned.
  bool resume();
  // On the fiber: back to resume()'s caller, until the next resume().
  // Throws FiberUnwind when the fiber is being destroyed instead.
  void suspend();
  // The exception the body ended with, if any.
  std::exception_ptr error() const;

  struct State;  // in fiber.cpp, with everything Boost

 private:
  std::unique_ptr<State> state_;
};

}  // namespace detail
}  // namespace reprise
