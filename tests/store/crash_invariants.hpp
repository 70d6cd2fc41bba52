// What a store written by store_child must look like after any crash: each
// execution holds exactly the steps it committed, every one of them whole,
// and at least every step that was acknowledged.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>

#include "engine/store/store.hpp"
#include "store_test_util.hpp"

namespace reprise::engine::testing {

// Parses "ack WORKFLOW_ID STEP" lines into the highest acknowledged step.
inline void record_ack(const std::string& line, std::map<std::string, int64_t>& acked) {
  std::istringstream in(line);
  std::string word, workflow_id;
  int64_t step_number = 0;
  if (in >> word >> workflow_id >> step_number && word == "ack") {
    acked[workflow_id] = std::max(acked[workflow_id], step_number);
  }
}

inline void expect_whole_steps(Store& store, int executions, const std::map<std::string, int64_t>& acked) {
  auto tasks = store.load_tasks(0, 1'000'000);
  ASSERT_TRUE(tasks.is_ok()) << tasks.status().to_string();
  auto timers = store.due_timers(from_unix_nanos(INT64_MAX), 1'000'000);
  ASSERT_TRUE(timers.is_ok()) << timers.status().to_string();
  history::EventBatchCodec codec;

  for (int e = 0; e < executions; ++e) {
    const ExecutionKey k = key("e-" + std::to_string(e));
    const auto found = acked.find(k.workflow_id);
    const int64_t acked_step = found == acked.end() ? 0 : found->second;
    Result<ExecutionRecord> rec = store.get_execution(k);
    int64_t v = 0;
    if (rec.is_ok()) {
      v = rec->version;
    } else {
      ASSERT_EQ(rec.status().code(), StatusCode::kNotFound) << rec.status().to_string();
    }
    SCOPED_TRACE(k.workflow_id + " at step " + std::to_string(v));
    EXPECT_GE(v, acked_step) << "an acknowledged step was lost";
    if (v == 0) continue;
    EXPECT_EQ(rec->state.substr(0, rec->state.find('.')), "v=" + std::to_string(v));
    EXPECT_EQ(rec->next_event_id, 3 * v + 1);

    auto batches = store.read_history(k, 1, 1'000'000);
    ASSERT_TRUE(batches.is_ok());
    v1::History h;
    for (const auto& b : *batches) ASSERT_TRUE(codec.decode(b.data, h).is_ok());
    ASSERT_EQ(h.events_size(), 3 * v) << "history holds exactly the committed steps";
    EXPECT_EQ(h.events(0).event_id(), 1);

    int task_count = 0, timer_count = 0;
    for (const auto& t : *tasks) {
      if (t.execution != k) continue;
      ++task_count;
      EXPECT_EQ(t.payload, k.workflow_id + ":" + std::to_string(v));
    }
    for (const auto& t : *timers) timer_count += t.execution == k ? 1 : 0;
    EXPECT_EQ(task_count, 1) << "each step swaps the one pending task";
    EXPECT_EQ(timer_count, v) << "each step adds one timer";
  }
}

}  // namespace reprise::engine::testing
