// The groups record_histories records, one per test file: each runs its
// scenarios against the real engine and saves their histories.
#pragma once

#include <filesystem>

namespace reprise::recorded {

void record_workflow_instance(const std::filesystem::path& dir);   // record_histories.cpp
void record_braced_temporaries(const std::filesystem::path& dir);  // recorded/braced_temporaries.cpp
void record_waiting(const std::filesystem::path& dir);             // recorded/waiting.cpp
void record_worker_tasks(const std::filesystem::path& dir);        // recorded/worker_tasks.cpp
void record_stackful(const std::filesystem::path& dir);            // recorded/stackful.cpp
void record_workflow_features(const std::filesystem::path& dir);   // recorded/workflow_features.cpp

}  // namespace reprise::recorded
