#include "worker/signal_inbox.hpp"

#include <algorithm>

namespace reprise::worker {

// A wait that knows where its value came from, to give it back unread.
struct SignalInbox::Wait final : detail::Pending {
  std::weak_ptr<Buffer> buffer;  // gone once the instance is
  int64_t event_id = 0;          // of the value it holds

  ~Wait() { give_back(); }
  void give_back() {
    if (!ready || canceled || value_taken || event_id == 0) return;
    if (auto b = buffer.lock()) b->values[name].emplace(event_id, std::move(result));
    event_id = 0;
  }
};

SignalInbox::SignalInbox() : buffer_(std::make_shared<Buffer>()) {}

std::shared_ptr<detail::Pending> SignalInbox::wait(const std::string& name, detail::WorkflowCore* core,
                                                   bool cancellable) {
  auto wait = std::make_shared<Wait>();
  wait->kind = detail::Pending::Kind::kSignal;
  wait->name = name;
  wait->cancellable = cancellable;
  wait->core = core;
  wait->buffer = buffer_;
  auto buffered = buffer_->values.find(name);
  if (buffered != buffer_->values.end()) {
    auto oldest = buffered->second.begin();
    wait->event_id = oldest->first;
    wait->result = std::move(oldest->second);
    wait->ready = true;
    buffered->second.erase(oldest);
    if (buffered->second.empty()) buffer_->values.erase(buffered);
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
    if (!alive) continue;  // dropped before a value came
    if (waits->second.empty()) waits_.erase(waits);
    auto* wait = static_cast<Wait*>(alive.get());
    wait->event_id = event_id;
    wait->result = std::move(value);
    return alive;
  }
  if (waits != waits_.end()) waits_.erase(waits);
  buffer_->values[name].emplace(event_id, std::move(value));
  return nullptr;
}

void SignalInbox::withdraw(const std::shared_ptr<detail::Pending>& pending) {
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
  for (const auto& [name, values] : buffer_->values) {
    for (const auto& [event_id, value] : values) bytes += value.ByteSizeLong();
  }
  return bytes;
}

}  // namespace reprise::worker
