#include "prelude.hpp"
inline constexpr reprise::Signal<Order> amend{"amend"};
void send(reprise::Client& client) { client.signal("order-7", amend, Order{"o7", 100}); }
