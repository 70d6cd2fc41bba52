#include "prelude.hpp"
void start(reprise::Client& client) { client.start(square_wf, {.id = "sq", .task_queue = "q"}, int64_t{4}); }
