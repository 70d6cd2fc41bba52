#include "worker/signal_inbox.hpp"

#include <algorithm>

namespace reprise::worker {

SignalInbox::SignalInbox(FutureResolver& futures) : futures_(futures) {}

std::shared_ptr<detail::Pending> SignalInbox::wait(const std::string& name, detail::WorkflowCore* core,
                                                   bool cancellable) {
  auto wait = std::make_shared<SignalWaitMachine>(name, cancellable, core, weak_from_this());
  auto buffered = buffer_.find(name);
  if (buffered != buffer_.end()) {
    auto oldest = buffered->second.begin();
    wait->receive(oldest->first, oldest->second);
    wait->ready = true;
    buffered->second.erase(oldest);
    if (buffered->second.empty()) buffer_.erase(buffered);
  } else {
    auto& waits = waits_[name];
    // Forget the dropped ones here too: a loop whose waits keep losing to a
    // timer must not grow the list.
    std::erase_if(waits, [](const std::weak_ptr<detail::Pending>& w) { return w.expired(); });
    waits.push_back(wait);
  }
  return wait;
}

std::shared_ptr<detail::Pending> SignalInbox::deliver(const std::string& name, int64_t event_id, v1::Payloads value) {
  auto waits = waits_.find(name);
  while (waits != waits_.end() && !waits->second.empty()) {
    std::shared_ptr<detail::Pending> alive = waits->second.front().lock();
    waits->second.pop_front();
    // Dropped before a value came, or no longer waiting: the next one.
    if (!alive || !static_cast<SignalWaitMachine&>(*alive).receive(event_id, value)) continue;
    if (waits->second.empty()) waits_.erase(waits);
    return alive;
  }
  if (waits != waits_.end()) waits_.erase(waits);
  buffer_[name].emplace(event_id, std::move(value));
  return nullptr;
}

void SignalInbox::give_back(const std::string& name, int64_t event_id, v1::Payloads value) {
  // A wait still waiting was made while no value was buffered and has had
  // none since: this value, older than any to come, is its next.
  if (auto wait = deliver(name, event_id, std::move(value))) futures_.resolve(wait);
}

void SignalInbox::withdraw(const std::shared_ptr<detail::Pending>& pending) {
  static_cast<SignalWaitMachine&>(*pending).cancel();
  auto waits = waits_.find(pending->name);
  if (waits != waits_.end()) {
    std::erase_if(waits->second, [&](const std::weak_ptr<detail::Pending>& w) {
      auto alive = w.lock();
      return !alive || alive == pending;
    });
    if (waits->second.empty()) waits_.erase(waits);
  }
}

std::vector<std::shared_ptr<detail::Pending>> SignalInbox::live_waits() const {
  std::vector<std::shared_ptr<detail::Pending>> out;
  for (const auto& [name, waits] : waits_) {
    for (const auto& w : waits) {
      if (auto alive = w.lock()) out.push_back(std::move(alive));
    }
  }
  return out;
}

size_t SignalInbox::approximate_bytes(size_t per_wait) const {
  size_t bytes = 0;
  for (const auto& [name, waits] : waits_) bytes += waits.size() * per_wait;
  for (const auto& [name, values] : buffer_) {
    for (const auto& [event_id, value] : values) bytes += value.ByteSizeLong();
  }
  return bytes;
}

}  // namespace reprise::worker
