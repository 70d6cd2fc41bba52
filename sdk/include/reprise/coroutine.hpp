// The coroutine types of workflow code: Workflow<T> for a workflow
// function, Task<T> for a helper it awaits. Included by <reprise/workflow.hpp>.
#pragma once

#include <coroutine>
#include <cstddef>
#include <exception>
#include <type_traits>
#include <utility>
#include <variant>

#include "reprise/detail/call_checks.hpp"
#include "reprise/detail/frame_account.hpp"

namespace reprise {

namespace detail {

template <typename T>
struct ResultSlot {
  std::variant<std::monostate, T, std::exception_ptr> value;
  void return_value(T v) { value.template emplace<1>(std::move(v)); }
  // Anything else co_returned: a clear error instead of a failed conversion.
  template <typename U>
  requires(!std::is_convertible_v<U, T>) void return_value(U&&) {
    static_assert(always_false<U>,
                  "reprise: co_return of a value that does not convert to the T of Workflow<T> or Task<T>");
  }
  T take() {
    if (value.index() == 2) std::rethrow_exception(std::get<2>(value));
    return std::move(std::get<1>(value));
  }
};
template <>
struct ResultSlot<void> {
  std::exception_ptr error;
  bool done = false;
  void return_void() { done = true; }
  void take() {
    if (error) std::rethrow_exception(error);
  }
};

}  // namespace detail

// The coroutine type of a workflow function. Created suspended; the runtime
// starts it and owns its frame.
template <typename T = void>
class [[nodiscard]] Workflow {
 public:
  struct promise_type : detail::ResultSlot<T> {
    static void* operator new(std::size_t size) { return detail::allocate_frame(size); }
    static void operator delete(void* frame, std::size_t size) { detail::free_frame(frame, size); }
    bool finished = false;
    Workflow get_return_object() { return Workflow(std::coroutine_handle<promise_type>::from_promise(*this)); }
    std::suspend_always initial_suspend() noexcept { return {}; }
    // Stays suspended at the end so the runtime reads the result, then frees it.
    auto final_suspend() noexcept {
      finished = true;
      return std::suspend_always{};
    }
    void unhandled_exception() {
      if constexpr (std::is_void_v<T>) {
        this->error = std::current_exception();
      } else {
        this->value.template emplace<2>(std::current_exception());
      }
    }
  };
  using value_type = T;

  Workflow(Workflow&& other) noexcept : handle_(std::exchange(other.handle_, {})) {}
  Workflow& operator=(Workflow&& other) noexcept {
    if (this != &other) {
      if (handle_) handle_.destroy();
      handle_ = std::exchange(other.handle_, {});
    }
    return *this;
  }
  ~Workflow() {
    if (handle_) handle_.destroy();
  }

  // For the runtime.
  std::coroutine_handle<> handle() const { return handle_; }
  bool finished() const { return handle_.promise().finished; }
  // The co_returned value, or the exception the workflow ended with.
  T result() { return handle_.promise().take(); }

 private:
  explicit Workflow(std::coroutine_handle<promise_type> h) : handle_(h) {}
  std::coroutine_handle<promise_type> handle_;
};

// A helper coroutine awaited inside a workflow. Lazy: it starts when awaited
// and resumes its awaiter when it finishes.
template <typename T = void>
class [[nodiscard]] Task {
 public:
  using value_type = T;
  struct promise_type : detail::ResultSlot<T> {
    static void* operator new(std::size_t size) { return detail::allocate_frame(size); }
    static void operator delete(void* frame, std::size_t size) { detail::free_frame(frame, size); }
    std::coroutine_handle<> continuation;
    Task get_return_object() { return Task(std::coroutine_handle<promise_type>::from_promise(*this)); }
    std::suspend_always initial_suspend() noexcept { return {}; }
    struct FinalAwaiter {
      bool await_ready() noexcept { return false; }
      std::coroutine_handle<> await_suspend(std::coroutine_handle<promise_type> h) noexcept {
        return h.promise().continuation ? h.promise().continuation : std::noop_coroutine();
      }
      void await_resume() noexcept {}
    };
    FinalAwaiter final_suspend() noexcept { return {}; }
    void unhandled_exception() {
      if constexpr (std::is_void_v<T>) {
        this->error = std::current_exception();
      } else {
        this->value.template emplace<2>(std::current_exception());
      }
    }
  };

  Task(Task&& other) noexcept : handle_(std::exchange(other.handle_, {})) {}
  Task(const Task&) = delete;
  ~Task() {
    if (handle_) handle_.destroy();
  }

  bool await_ready() const noexcept { return false; }
  std::coroutine_handle<> await_suspend(std::coroutine_handle<> awaiter) noexcept {
    handle_.promise().continuation = awaiter;
    return handle_;
  }
  T await_resume() { return handle_.promise().take(); }

 private:
  explicit Task(std::coroutine_handle<promise_type> h) : handle_(h) {}
  std::coroutine_handle<promise_type> handle_;
};

namespace detail {

// A spawned branch's outer coroutine: started and owned by the runtime,
// which destroys its frame when it finishes or when the workflow goes away.
struct Branch {
  struct promise_type {
    static void* operator new(std::size_t size) { return detail::allocate_frame(size); }
    static void operator delete(void* frame, std::size_t size) { detail::free_frame(frame, size); }
    Branch get_return_object() { return Branch{std::coroutine_handle<promise_type>::from_promise(*this)}; }
    std::suspend_always initial_suspend() noexcept { return {}; }
    std::suspend_always final_suspend() noexcept { return {}; }
    void return_void() noexcept {}
    // The branch body catches everything into the branch's future.
    void unhandled_exception() noexcept { std::terminate(); }
  };
  std::coroutine_handle<promise_type> handle;
};

}  // namespace detail

}  // namespace reprise
