// What every compile-fail snippet shares: an order, two activities, two
// workflows and their handles, written the way the docs show.
#ifndef REPRISE_TESTS_COMPILE_FAIL_PRELUDE_HPP
#define REPRISE_TESTS_COMPILE_FAIL_PRELUDE_HPP

#include <chrono>
#include <string>

#include "reprise/client.hpp"
#include "reprise/worker.hpp"
#include "reprise/workflow.hpp"

using namespace std::chrono_literals;

struct Order {
  std::string id;
  int64_t cents = 0;
  MSGPACK_DEFINE_MAP(id, cents);
};

inline std::string charge(reprise::ActivityContext&, Order order) { return "receipt-" + order.id; }
inline constexpr reprise::Activity<&charge> charge_card{"charge"};

inline reprise::Workflow<int64_t> square(reprise::WorkflowContext&, int64_t n) { co_return n* n; }
inline constexpr reprise::WorkflowDef<&square> square_wf{"square"};

inline const auto kOptions = reprise::ActivityOptions::start_to_close(30s);

#endif  // REPRISE_TESTS_COMPILE_FAIL_PRELUDE_HPP
