#include "sdk/src/server_targets.hpp"

namespace reprise::detail {

ServerTargets::ServerTargets(const std::vector<std::string>& addresses,
                             const std::shared_ptr<grpc::ChannelCredentials>& credentials,
                             const grpc::ChannelArguments& args) {
  for (const std::string& address : addresses) {
    Target t;
    t.address = address;
    t.channel = grpc::CreateCustomChannel(address, credentials, args);
    t.stub = v1::WorkflowService::NewStub(t.channel);
    targets_.push_back(std::move(t));
  }
}

bool ServerTargets::connected(size_t at) const { return targets_[at].channel->GetState(false) == GRPC_CHANNEL_READY; }

size_t ServerTargets::move_past(size_t at) {
  const size_t next = (at + 1) % targets_.size();
  current_.compare_exchange_strong(at, next);
  return next;
}

bool FailOver::next(size_t& at, const grpc::Status& failed) {
  if (failed.error_code() != grpc::StatusCode::UNAVAILABLE || targets_.size() < 2) return false;
  last_errors_.resize(targets_.size());
  last_errors_[at] = failed.error_message();
  reached_in_round_ |= targets_.connected(at);
  at = targets_.move_past(at);
  if (++failed_in_row_ % targets_.size() != 0) return true;
  // Every address failed the call in turn.
  if (!std::exchange(reached_in_round_, false)) return false;  // none is up
  return round_pause_.wait();
}

std::string FailOver::message(const grpc::Status& failed) const {
  if (last_errors_.empty() || failed.error_code() != grpc::StatusCode::UNAVAILABLE) return failed.error_message();
  std::string out = "no server address could take the call:";
  for (size_t i = 0; i < last_errors_.size(); ++i) {
    if (last_errors_[i].empty()) continue;
    out += " " + targets_.address(i) + ": " + last_errors_[i] + ";";
  }
  out.pop_back();
  return out;
}

}  // namespace reprise::detail
