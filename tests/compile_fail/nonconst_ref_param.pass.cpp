#include "prelude.hpp"
std::string ship(reprise::ActivityContext&, const Order& order) { return order.id; }
inline constexpr reprise::Activity<&ship> ship_parcel{"ship"};
