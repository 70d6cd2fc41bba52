// The examples, for the demo, the tests and `reprise-examples`:
// register them all with a worker, run them all through a client.
#pragma once

#include <cstdio>
#include <string>

#include "examples/approval.hpp"
#include "examples/fan_out.hpp"
#include "examples/hello.hpp"
#include "examples/long_loop.hpp"
#include "examples/report.hpp"
#include "examples/saga.hpp"
#include "examples/stackful.hpp"
#include "examples/versioning.hpp"
#include "reprise/client.hpp"
#include "reprise/worker.hpp"

namespace examples {

// Every example's workflows and activities (shipping as version 2).
void register_all(reprise::Worker& worker);

// Starts each example on `task_queue` (ids prefixed with `prefix`), drives
// it (signals, queries) and checks its outcome, printing a line per step to
// `out`. True when every example ended as it should. The report pipeline
// builds a report of `report_megabytes` (sanitizer runs use less).
bool run_all(reprise::Client& client, const std::string& task_queue, const std::string& prefix, std::FILE* out,
             int64_t report_megabytes = 50);

}  // namespace examples
