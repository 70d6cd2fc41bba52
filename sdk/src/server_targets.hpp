// ServerTargets: the nodes a remote Connection talks to (one, or several of
// a cluster: docs/cluster.md "Clients with several addresses"), a channel
// and a stub per address, and which one calls go to now. FailOver: what one
// call does when the node it was sent to answers UNAVAILABLE.
//
// Calls stay on one node while it answers, as gRPC's pick_first would. A
// call that gets UNAVAILABLE (the node refused the connection, died during
// the call, is shutting down, or could not serve the call's shard just now)
// is sent again, unchanged, to the next address, and later calls go there
// too. Once every address has failed the call in a row it pauses (20 ms
// doubling to 1 s) and goes round again, until its deadline; but when no
// address was even reachable in that round (no node answered at all) it
// fails at once. Sending a call again is safe: a start or a signal carries
// a request id the engine deduplicates, a cancel request is idempotent, and
// a call naming a task token, a terminate or a delete that already took
// effect is refused rather than done twice.
//
// Thread safety: ServerTargets, any thread (its stubs are gRPC's, shared);
// a FailOver is one call's, on its thread.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "reprise/v1/service.grpc.pb.h"
#include "sdk/src/busy_backoff.hpp"

namespace reprise::detail {

class ServerTargets {
 public:
  // `addresses`: at least one (address_list.hpp).
  ServerTargets(const std::vector<std::string>& addresses, const std::shared_ptr<grpc::ChannelCredentials>& credentials,
                const grpc::ChannelArguments& args);

  size_t size() const { return targets_.size(); }
  // The address calls go to now.
  size_t current() const { return current_.load(); }
  v1::WorkflowService::Stub& stub(size_t at) { return *targets_[at].stub; }
  const std::string& address(size_t at) const { return targets_[at].address; }
  // Whether the node at `at` has a connection up: a call's failure came
  // from it, not from failing to reach it.
  bool connected(size_t at) const;
  // After the node at `at` answered UNAVAILABLE: later calls go to the next
  // address, unless another call has moved them already. The next address.
  size_t move_past(size_t at);

 private:
  struct Target {
    std::string address;
    std::shared_ptr<grpc::Channel> channel;
    std::unique_ptr<v1::WorkflowService::Stub> stub;
  };
  std::vector<Target> targets_;
  std::atomic<size_t> current_{0};
};

class FailOver {
 public:
  FailOver(ServerTargets& targets, std::chrono::steady_clock::time_point deadline)
      : targets_(targets), round_pause_(deadline) {}

  // The call failed with `failed` at `at`. True, with `at` the address to
  // send it to now, when it goes on; false when it fails with `failed`: an
  // error other than UNAVAILABLE, a connection of one address, no address
  // reachable in a whole round, or the deadline before the next round.
  bool next(size_t& at, const grpc::Status& failed);
  // The call's error message: `failed`'s, or with several addresses what
  // each answered last.
  std::string message(const grpc::Status& failed) const;

 private:
  ServerTargets& targets_;
  BusyBackoff round_pause_;
  size_t failed_in_row_ = 0;
  bool reached_in_round_ = false;
  std::vector<std::string> last_errors_;  // per address, once any failed
};

}  // namespace reprise::detail
