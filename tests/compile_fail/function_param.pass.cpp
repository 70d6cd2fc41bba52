#include <functional>

#include "prelude.hpp"
std::string notify(reprise::ActivityContext&, std::string callback_url) { return callback_url; }
inline constexpr reprise::Activity<&notify> notify_activity{"notify"};
