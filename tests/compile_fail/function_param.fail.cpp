#include <functional>

#include "prelude.hpp"
std::string notify(reprise::ActivityContext&, std::function<void()> callback) {
  callback();
  return "ok";
}
inline constexpr reprise::Activity<&notify> notify_activity{"notify"};
// expect: activity parameters must be Serializable values taken by value or const&
