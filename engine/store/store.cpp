#include "engine/store/store.hpp"

#include <future>

namespace reprise::engine {

Result<CommitResult> Store::commit(Transition transition) {
  std::promise<Result<CommitResult>> done;
  std::future<Result<CommitResult>> result = done.get_future();
  commit_async(std::move(transition), [&done](Result<CommitResult> r) { done.set_value(std::move(r)); });
  return result.get();
}

}  // namespace reprise::engine
