#include <chrono>

#include "fees.hpp"

double exchange_rate() {
  auto now = std::chrono::system_clock::now();
  return 1.0 + static_cast<double>(now.time_since_epoch().count() % 10) / 100.0;
}
