// Records worker_tasks_test.cpp's history: `steps` run to its end, one task
// per timer.
#include "tests/worker/recorded/worker_tasks.hpp"

#include "tests/worker/record_groups.hpp"
#include "tests/worker/recording.hpp"

namespace reprise::recorded {

void record_worker_tasks(const std::filesystem::path& dir) {
  using namespace std::chrono_literals;
  Recording r(dir);
  r.start(worker_tasks::steps_wf, "steps-1", "steps");
  r.workflow_task("steps");
  r.fire_timers("steps-1", 1min);
  r.workflow_task("steps");
  r.fire_timers("steps-1", 1min, 2);
  require(completes(r.workflow_task("steps")), "steps-1 completes");
  r.save("steps-1", "worker_tasks_steps");
}

}  // namespace reprise::recorded
