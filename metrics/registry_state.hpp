// A Registry's families and scrape hooks (reprise/metrics.hpp).
//
// Thread safety: `mu` guards `families` (appended, never removed, so a
// Family* stays valid for the registry's life); `scrape_mu` guards `hooks`
// and lets one scrape run at a time.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "metrics/family.hpp"
#include "reprise/metrics.hpp"

namespace reprise::metrics::detail {

struct RegistryState {
  Family* add(std::string name, std::string help, Kind kind, std::vector<std::string> labels,
              std::vector<double> bounds);

  RegistryOptions options;
  mutable std::mutex mu;
  std::vector<std::unique_ptr<Family>> families;
  mutable std::mutex scrape_mu;
  std::vector<std::function<void()>> hooks;
};

}  // namespace reprise::metrics::detail
