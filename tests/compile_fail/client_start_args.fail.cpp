#include "prelude.hpp"
void start(reprise::Client& client) { client.start(square_wf, {.id = "sq", .task_queue = "q"}); }
// expect: client.start: the arguments do not match the workflow's parameters
// expect: workflow_start_mismatch<
