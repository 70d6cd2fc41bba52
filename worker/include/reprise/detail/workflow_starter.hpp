// Starting a workflow type from its input, type-erased, and the policy for
// bugs in workflow code: what <reprise/worker.hpp> and <reprise/testing.hpp>
// instantiate for each registered workflow. Private to the SDK, the worker
// and the testing library; it holds no worker internals.
#pragma once

#include <coroutine>
#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>

#include "reprise/export.hpp"
#include "reprise/stackful.hpp"
#include "reprise/workflow.hpp"

namespace reprise::worker {

// A started workflow body, type-erased: the coroutine to resume and how to
// read its result once it finishes.
class REPRISE_EXPORT RunningWorkflow {
 public:
  virtual ~RunningWorkflow() = default;
  virtual std::coroutine_handle<> handle() = 0;
  virtual bool finished() const = 0;
  // The encoded result; rethrows what the workflow threw.
  virtual v1::Payloads take_result() = 0;
};

// How to start a workflow type from its input: decodes the arguments
// (fetching claim-checks through `load`), calls the function. Throws
// PayloadError when the input does not decode.
using WorkflowStarter = std::function<std::unique_ptr<RunningWorkflow>(WorkflowContext&, const v1::Payloads& input,
                                                                       const PayloadLoader& load)>;

// What an exception from the workflow's code does when it is not a workflow
// outcome (ApplicationError, ActivityError, ChildWorkflowError, CanceledError)
// but a bug: std::out_of_range, a PayloadError, anything else.
enum class PanicPolicy {
  kFailTask,      // the task fails and is retried: the workflow waits for a fix (default)
  kFailWorkflow,  // the workflow fails with the exception's message
};

namespace starter {

template <typename R>
class TypedRunning final : public RunningWorkflow {
 public:
  explicit TypedRunning(Workflow<R> body) : body_(std::move(body)) {}
  std::coroutine_handle<> handle() override { return body_.handle(); }
  bool finished() const override { return body_.finished(); }
  v1::Payloads take_result() override {
    v1::Payloads out;
    if constexpr (std::is_void_v<R>) {
      body_.result();
      *out.add_payloads() = null_payload();
    } else {
      *out.add_payloads() = to_payload(body_.result());
    }
    return out;
  }

 private:
  Workflow<R> body_;
};

}  // namespace starter

// Adapts `Workflow<R> fn(WorkflowContext&, Args...)`, or a stackful
// `R fn(StackfulContext&, Args...)` run on stacks of `stack`, to a
// WorkflowStarter (a stackless one ignores `stack`).
template <auto Fn>
WorkflowStarter make_starter(std::string name, StackOptions stack = {}) {
  using Sig = reprise::detail::WorkflowSignature<decltype(Fn)>;
  return [name = std::move(name), stack](WorkflowContext& ctx, const v1::Payloads& input,
                                         const PayloadLoader& load) -> std::unique_ptr<RunningWorkflow> {
    auto call = [&]<typename... Args>(std::tuple<Args...>*) {
      std::tuple<Args...> args = from_payloads<Args...>(input, "the input of workflow '" + name + "'", load);
      if constexpr (Sig::stackful) {
        return StackfulContext::run_workflow<Fn>(ctx, std::move(args), stack);
      } else {
        return std::apply([&](Args&... a) { return Fn(ctx, std::move(a)...); }, args);
      }
    };
    return std::make_unique<starter::TypedRunning<typename Sig::result>>(
        call(static_cast<typename Sig::args*>(nullptr)));
  };
}

}  // namespace reprise::worker
