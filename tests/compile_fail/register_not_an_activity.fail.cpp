#include "prelude.hpp"
std::string label(Order o) { return o.id; }  // no ActivityContext&
inline constexpr reprise::Activity<&label> label_activity{"label"};
void setup(reprise::Worker& worker) { worker.register_activity(label_activity); }
// expect: an activity is a function `R f(reprise::ActivityContext&, Args...)`
