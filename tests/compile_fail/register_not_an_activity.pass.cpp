#include "prelude.hpp"
std::string label(reprise::ActivityContext&, Order o) { return o.id; }
inline constexpr reprise::Activity<&label> label_activity{"label"};
void setup(reprise::Worker& worker) { worker.register_activity(label_activity); }
