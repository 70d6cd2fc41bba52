// lint.conf: allow trusts a function, deny makes calls to one a finding,
// exclude skips files.
#include <chrono>
#include <string>

#include "reprise/workflow.hpp"
#include "vendor/pricing.hpp"

namespace billing {
// Reads a clock, but the team has proven it is only used for metrics.
long metrics_stamp() { return std::chrono::steady_clock::now().time_since_epoch().count(); }
std::string legacy_lookup(const std::string& sku) { return "price-of-" + sku; }
}  // namespace billing

reprise::Workflow<std::string> prices(reprise::WorkflowContext&, std::string sku) {
  long stamp = billing::metrics_stamp();
  std::string price = billing::legacy_lookup(sku);                 // expect: reprise-io
  co_return price + std::to_string(stamp + vendor::list_price());  // expect: reprise-denied
}
