#include "prelude.hpp"
std::string ship(reprise::ActivityContext&, Order& order) { return order.id; }
inline constexpr reprise::Activity<&ship> ship_parcel{"ship"};
// expect: activity parameters must be Serializable values taken by value or const&
