#include "prelude.hpp"
inline constexpr reprise::Signal<Order> amend{"amend"};
void send(reprise::Client& client) { client.signal("order-7", amend, std::string("o7")); }
// expect: client.signal: the value is not of the Signal<T>'s type T
