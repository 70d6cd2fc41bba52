#pragma once

#include <cstdlib>

namespace vendor {
// Excluded by the config: not followed, never reported.
inline long list_price() { return std::rand() % 100; }
}  // namespace vendor
