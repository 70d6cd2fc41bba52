// SignalWaitMachine: its table, and that a value is neither lost nor
// doubled whichever way a wait ends (read, dropped unread, canceled).
#include "worker/machines/signal_wait_machine.hpp"

#include <gtest/gtest.h>

#include "tests/worker/machine_test_support.hpp"
#include "worker/signal_inbox.hpp"

namespace reprise::worker {
namespace {

using State = SignalWaitMachine::State;

v1::Payloads value(const std::string& data) {
  v1::Payloads p;
  p.add_payloads()->set_data(data);
  return p;
}

// Records which waits a given-back value made ready.
struct Resolved : FutureResolver {
  void resolve(const std::shared_ptr<detail::Pending>& pending) override { waits.push_back(pending); }
  std::vector<std::shared_ptr<detail::Pending>> waits;
};

TEST(SignalWaitMachineTest, TableIsAFunction) { expect_one_row_per_state_and_input(SignalWaitMachine::kTable); }

TEST(SignalWaitMachineTest, AWaitingWaitReceivesOneValue) {
  SignalWaitMachine wait("approve", true, nullptr, {});
  EXPECT_EQ(wait.state(), State::kWaiting);
  v1::Payloads first = value("yes");
  ASSERT_TRUE(wait.receive(7, first));
  EXPECT_EQ(wait.state(), State::kReceived);
  EXPECT_EQ(wait.result.payloads(0).data(), "yes");
  v1::Payloads second = value("no");
  EXPECT_FALSE(wait.receive(9, second)) << "a wait takes one value";
  EXPECT_EQ(second.payloads(0).data(), "no") << "and leaves the next for another wait";
}

TEST(SignalWaitMachineTest, AWaitDroppedWithItsValueUnreadGivesItBackAtItsPlace) {
  Resolved resolved;
  auto inbox = std::make_shared<SignalInbox>(resolved);
  ASSERT_EQ(inbox->deliver("approve", 7, value("yes")), nullptr) << "no wait yet: buffered";
  EXPECT_EQ(inbox->deliver("approve", 9, value("later")), nullptr);
  inbox->wait("approve", nullptr, true);  // takes "yes", dropped unread
  auto next = inbox->wait("approve", nullptr, true);
  ASSERT_TRUE(next->ready);
  EXPECT_EQ(next->result.payloads(0).data(), "yes") << "back before the later value";
  EXPECT_TRUE(resolved.waits.empty());
}

TEST(SignalWaitMachineTest, AWaitDroppedWithItsValueUnreadHandsItToAWaitAlreadyWaiting) {
  Resolved resolved;
  auto inbox = std::make_shared<SignalInbox>(resolved);
  auto dropped = inbox->wait("approve", nullptr, true);
  auto waiting = inbox->wait("approve", nullptr, true);
  ASSERT_EQ(inbox->deliver("approve", 7, value("yes")), dropped) << "the oldest wait";
  dropped.reset();
  ASSERT_EQ(resolved.waits.size(), 1u);
  EXPECT_EQ(resolved.waits[0], waiting) << "handed on and made ready, not buffered";
  EXPECT_EQ(waiting->result.payloads(0).data(), "yes");
  auto after = inbox->wait("approve", nullptr, true);
  EXPECT_FALSE(after->ready) << "not given twice";
}

TEST(SignalWaitMachineTest, AReadValueOrACanceledWaitGivesNothingBack) {
  Resolved resolved;
  auto inbox = std::make_shared<SignalInbox>(resolved);
  {
    auto read = inbox->wait("approve", nullptr, true);
    ASSERT_EQ(inbox->deliver("approve", 7, value("yes")), read);
    read->value_taken = true;
    auto canceled = inbox->wait("approve", nullptr, true);
    inbox->withdraw(canceled);
    EXPECT_EQ(static_cast<SignalWaitMachine&>(*canceled).state(), State::kCanceled);
    v1::Payloads late = value("late");
    EXPECT_FALSE(static_cast<SignalWaitMachine&>(*canceled).receive(9, late));
  }
  EXPECT_FALSE(inbox->wait("approve", nullptr, true)->ready) << "nothing came back";
  EXPECT_TRUE(resolved.waits.empty());
}

TEST(SignalWaitMachineTest, TheInboxGivesACanceledWaitsSignalToTheNextWait) {
  Resolved resolved;
  auto inbox = std::make_shared<SignalInbox>(resolved);
  auto canceled = inbox->wait("approve", nullptr, true);
  auto alive = inbox->wait("approve", nullptr, true);
  inbox->withdraw(canceled);
  EXPECT_EQ(static_cast<SignalWaitMachine&>(*canceled).state(), State::kCanceled);
  EXPECT_EQ(inbox->deliver("approve", 7, value("yes")), alive);
  EXPECT_EQ(alive->result.payloads(0).data(), "yes");
}

}  // namespace
}  // namespace reprise::worker
