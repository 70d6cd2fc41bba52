// Records braced_temporaries_test.cpp's history: both activities scheduled
// in the first task, completed in the order they were scheduled.
#include "tests/worker/recorded/braced_temporaries.hpp"

#include "reprise/codec.hpp"
#include "tests/worker/record_groups.hpp"
#include "tests/worker/recording.hpp"

namespace reprise::recorded {

void record_braced_temporaries(const std::filesystem::path& dir) {
  Recording r(dir);
  r.start(braced::named_then_awaited_wf, "named-1", "braced");
  require(r.workflow_task("braced").size() == 2, "named-1: both activities in the first task");
  auto shipped = r.activity_tasks("braced", 2);
  r.complete(shipped.at("1"), to_payload(std::string("one")));
  r.complete(shipped.at("2"), to_payload(std::string("two")));
  require(completes(r.workflow_task("braced")), "named-1 completes");
  r.save("named-1", "braced_named");
}

}  // namespace reprise::recorded
