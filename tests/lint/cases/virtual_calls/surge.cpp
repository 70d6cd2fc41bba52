// The override of Pricing::price that reads the clock, in a unit of its own.
#include <chrono>

#include "pricing.hpp"

long SurgePricing::price(long cents) const {
  auto hour = std::chrono::system_clock::now().time_since_epoch() / std::chrono::hours(1);
  return hour % 24 >= 18 ? cents * 2 : cents;
}

const Pricing& default_pricing() {
  static const SurgePricing pricing;
  return pricing;
}
