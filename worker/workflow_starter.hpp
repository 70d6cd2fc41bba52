// make_starter: from a typed workflow function to the type-erased starter a
// WorkflowInstance runs. Included by workflow_instance.hpp.
#pragma once

#include <tuple>
#include <type_traits>

namespace reprise::worker {

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

// A stackful workflow (first parameter StackfulContext&) runs on a stack of
// `stack`'s size; a stackless one ignores it.
template <auto Fn>
WorkflowStarter make_starter(std::string name, StackOptions stack) {
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
