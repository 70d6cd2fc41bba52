// report pipeline: a 50 MB report built by one activity and published by
// another. It travels as a Ref — a claim-check in the server's blob store —
// so the workflow never loads it and its history stays a few KiB.
#pragma once

#include <string>

#include "reprise/activity.hpp"
#include "reprise/workflow.hpp"

namespace examples {

using namespace std::chrono_literals;

inline reprise::Ref<std::string> build_report(reprise::ActivityContext& ctx, int64_t megabytes) {
  std::string report;
  report.reserve(static_cast<size_t>(megabytes) << 20);
  for (int64_t row = 0; report.size() < (static_cast<size_t>(megabytes) << 20); ++row) {
    report += "row " + std::to_string(row) + ": " + std::to_string(row * 7919 % 100003) + "\n";
  }
  return ctx.store(report);
}
inline int64_t publish_report(reprise::ActivityContext& ctx, reprise::Ref<std::string> report) {
  return static_cast<int64_t>(ctx.load(report).size());
}
inline constexpr reprise::Activity<&build_report> build_report_activity{"build_report"};
inline constexpr reprise::Activity<&publish_report> publish_report_activity{"publish_report"};

inline reprise::Workflow<int64_t> report_pipeline(reprise::WorkflowContext& ctx, int64_t megabytes) {
  const auto options = reprise::ActivityOptions::start_to_close(2min);
  reprise::Ref<std::string> report = co_await ctx.execute(build_report_activity, options, megabytes);
  co_return co_await ctx.execute(publish_report_activity, options, report);
}
inline constexpr reprise::WorkflowDef<&report_pipeline> report_wf{"report_pipeline"};

}  // namespace examples
