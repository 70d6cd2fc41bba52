// EngineRuntime: where an engine's work runs when a driver, not the engine,
// owns the threads: the deterministic simulator (tests/sim/) runs every job,
// deadline and commit of the engine on one seeded scheduler.
//
// With a runtime the engine starts no thread of its own: its jobs go to
// `executor`, `read_pool` and `upload_pool`, its deadlines to `deadlines`.
// The timer loop is stepped on them: each pass a job on `executor`, each
// sleep a deadline, by the thread's own rule (timer_loop.cpp). The rest of
// the background threads' work is the driver's to call as time passes:
// Engine::sweep_retention() and blob collection if the driver wants them. Without one (the default) the
// engine has its own pools, deadline thread, timer loop, retention sweeper
// and blob collector.
//
// Lifetime: the runtime's members outlive the engine.
#pragma once

#include "engine/deadlines.hpp"
#include "engine/task_runner.hpp"

namespace reprise::engine {

struct EngineRuntime {
  TaskRunner& executor;
  TaskRunner& read_pool;
  TaskRunner& upload_pool;
  Deadlines& deadlines;
};

}  // namespace reprise::engine
