#include "sim_fiber.hpp"

#include <stdexcept>
#include <utility>

namespace reprise::sim {

namespace {

SimFiber* running = nullptr;  // the simulator is one thread

// Replay, protobuf and the workflow's coroutines run on it; guarded, so an
// overflow faults at once.
constexpr StackOptions kStack{.bytes = 512 * 1024, .guard_page = true};

}  // namespace

SimFiber::SimFiber(Scheduler& s, std::function<void()> body, std::function<void()> on_end)
    : s_(s), fiber_(kStack, std::move(body)), on_end_(std::move(on_end)) {}

SimFiber* SimFiber::current() { return running; }

// The caller holds the fiber (resumer()'s lock), so on_end_ may drop its owner's reference.
void SimFiber::resume() {
  if (running != nullptr) throw std::logic_error("a SimFiber resumed from another fiber");
  if (ended_) return;
  running = this;
  ended_ = fiber_.resume();
  running = nullptr;
  if (ended_ && on_end_) on_end_();
}

std::function<void()> SimFiber::resumer() {
  return [weak = weak_from_this()] {
    if (std::shared_ptr<SimFiber> fiber = weak.lock()) fiber->resume();
  };
}

void SimFiber::start(const std::string& label) { s_.post(label, resumer()); }

// ~Fiber throws FiberUnwind from here to unwind a dropped fiber's stack.
void SimFiber::block() { fiber_.suspend(); }

void SimFiber::sleep(Duration d, const std::string& label) {
  s_.after(d, label, resumer());
  block();
}

}  // namespace reprise::sim
