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

TEST(SignalWaitMachineTest, TableIsAFunction) { expect_one_row_per_state_and_input(SignalWaitMachine::kTable); }

TEST(SignalWaitMachineTest, AWaitingWaitReceivesOneValue) {
  auto buffer = std::make_shared<SignalBuffer>();
  SignalWaitMachine wait("approve", true, nullptr, buffer);
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
  auto buffer = std::make_shared<SignalBuffer>();
  {
    SignalWaitMachine wait("approve", true, nullptr, buffer);
    v1::Payloads v = value("yes");
    ASSERT_TRUE(wait.receive(7, v));
  }
  ASSERT_EQ(buffer->values["approve"].size(), 1u);
  EXPECT_EQ(buffer->values["approve"].begin()->first, 7);
  EXPECT_EQ(buffer->values["approve"].begin()->second.payloads(0).data(), "yes");
}

TEST(SignalWaitMachineTest, AReadValueOrACanceledWaitGivesNothingBack) {
  auto buffer = std::make_shared<SignalBuffer>();
  {
    SignalWaitMachine read("approve", true, nullptr, buffer);
    v1::Payloads v = value("yes");
    ASSERT_TRUE(read.receive(7, v));
    read.value_taken = true;
    SignalWaitMachine canceled("approve", true, nullptr, buffer);
    canceled.cancel();
    EXPECT_EQ(canceled.state(), State::kCanceled);
    v1::Payloads late = value("late");
    EXPECT_FALSE(canceled.receive(9, late));
  }
  EXPECT_TRUE(buffer->values.empty());
}

TEST(SignalWaitMachineTest, TheInboxGivesACanceledWaitsSignalToTheNextWait) {
  SignalInbox inbox;
  auto canceled = inbox.wait("approve", nullptr, true);
  auto alive = inbox.wait("approve", nullptr, true);
  inbox.withdraw(canceled);
  EXPECT_EQ(static_cast<SignalWaitMachine&>(*canceled).state(), State::kCanceled);
  EXPECT_EQ(inbox.deliver("approve", 7, value("yes")), alive);
  EXPECT_EQ(alive->result.payloads(0).data(), "yes");
}

}  // namespace
}  // namespace reprise::worker
