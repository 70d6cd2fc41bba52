// The metrics registry and its Prometheus text writer (reprise/metrics.hpp):
// the exact text, escaping, cumulative buckets, the label cap, and counts
// that add up while many threads update them (run under TSan by ./run
// test-tsan).
#include "reprise/metrics.hpp"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

namespace reprise::metrics {
namespace {

TEST(Metrics, WritesCountersAndGaugesInTheTextFormat) {
  Registry registry;
  CounterFamily requests = registry.counters("service_requests_total", "Requests, by operation.", {"operation"});
  requests.with({"StartWorkflow"}).inc();
  requests.with({"StartWorkflow"}).inc(2);
  requests.with({"DescribeWorkflow"}).inc();
  registry.gauges("parked_polls", "Polls waiting.").with().set(4);
  registry.gauges("ratio", "A fraction.").with().set(0.25);

  EXPECT_EQ(registry.scrape(),
            "# HELP service_requests_total Requests, by operation.\n"
            "# TYPE service_requests_total counter\n"
            "service_requests_total{operation=\"DescribeWorkflow\"} 1\n"
            "service_requests_total{operation=\"StartWorkflow\"} 3\n"
            "# HELP parked_polls Polls waiting.\n"
            "# TYPE parked_polls gauge\n"
            "parked_polls 4\n"
            "# HELP ratio A fraction.\n"
            "# TYPE ratio gauge\n"
            "ratio 0.25\n");
}

TEST(Metrics, EscapesLabelValuesAndHelp) {
  Registry registry;
  registry.counters("odd_total", "Back\\slash and", {"type"}).with({"a\\b\"c\nd"}).inc();
  const std::string text = registry.scrape();
  EXPECT_NE(text.find("# HELP odd_total Back\\\\slash and\n"), std::string::npos) << text;
  EXPECT_NE(text.find("odd_total{type=\"a\\\\b\\\"c\\nd\"} 1\n"), std::string::npos) << text;
}

TEST(Metrics, HistogramBucketsAreCumulativeWithSumAndCount) {
  Registry registry;
  Histogram latency = registry.histograms("latency_seconds", "Latency.", {"op"}, {0.1, 1, 10}).with({"poll"});
  latency.observe(0.05);
  latency.observe(0.1);  // le is inclusive
  latency.observe(0.5);
  latency.observe(std::chrono::seconds(20));
  EXPECT_EQ(registry.scrape(),
            "# HELP latency_seconds Latency.\n"
            "# TYPE latency_seconds histogram\n"
            "latency_seconds_bucket{op=\"poll\",le=\"0.1\"} 2\n"
            "latency_seconds_bucket{op=\"poll\",le=\"1\"} 3\n"
            "latency_seconds_bucket{op=\"poll\",le=\"10\"} 3\n"
            "latency_seconds_bucket{op=\"poll\",le=\"+Inf\"} 4\n"
            "latency_seconds_sum{op=\"poll\"} 20.65\n"
            "latency_seconds_count{op=\"poll\"} 4\n");
  EXPECT_EQ(latency.count(), 4);
}

TEST(Metrics, HistogramCountsCopiedInReplaceWhatWasThere) {
  Registry registry;
  Histogram sizes = registry.histograms("batch_size", "Writes per commit.", {}, {1, 3}).with();
  const int64_t first[] = {5, 1, 0};
  sizes.set_counts(first, 7);
  const int64_t second[] = {6, 2, 1};
  sizes.set_counts(second, 20);
  const std::string text = registry.scrape();
  EXPECT_NE(text.find("batch_size_bucket{le=\"1\"} 6\nbatch_size_bucket{le=\"3\"} 8\n"
                      "batch_size_bucket{le=\"+Inf\"} 9\nbatch_size_sum 20\nbatch_size_count 9\n"),
            std::string::npos)
      << text;
}

TEST(Metrics, FoldsLabelValuesPastTheCapIntoOther) {
  Registry registry(RegistryOptions{.max_label_values = 2});
  CounterFamily closed = registry.counters("workflow_success_total", "Closed.", {"workflow_type", "status"});
  closed.with({"a", "ok"}).inc();
  closed.with({"b", "ok"}).inc();
  closed.with({"c", "ok"}).inc();  // a third type: folded
  closed.with({"d", "ok"}).inc(5);
  closed.with({"a", "ok"}).inc();  // a kept value stays itself
  const std::string text = registry.scrape();
  EXPECT_NE(text.find("workflow_success_total{workflow_type=\"__other__\",status=\"ok\"} 6\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("workflow_success_total{workflow_type=\"a\",status=\"ok\"} 2\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("workflow_type=\"c\""), std::string::npos) << text;
  EXPECT_EQ(text.find("workflow_type=\"d\""), std::string::npos) << text;
}

TEST(Metrics, RefusesBadNamesAndMismatchedRegistrations) {
  Registry registry;
  EXPECT_THROW(registry.counters("requests", "no _total"), std::invalid_argument);
  EXPECT_THROW(registry.gauges("1bad", "a digit first"), std::invalid_argument);
  EXPECT_THROW(registry.gauges("ok", "reserved label", {"__name"}), std::invalid_argument);
  EXPECT_THROW(registry.histograms("h", "le is the histogram's", {"le"}, {1}), std::invalid_argument);
  EXPECT_THROW(registry.histograms("h", "bounds must increase", {}, {2, 1}), std::invalid_argument);
  CounterFamily a = registry.counters("same_total", "x", {"op"});
  EXPECT_NO_THROW(registry.counters("same_total", "x", {"op"}));
  EXPECT_THROW(registry.counters("same_total", "x", {"other"}), std::invalid_argument);
  EXPECT_THROW(a.with({"one", "two"}), std::invalid_argument);
}

TEST(Metrics, DefaultHandlesDoNothing) {
  CounterFamily family;
  family.with({"anything"}).inc();
  Histogram().observe(1);
  Gauge().set(1);
  EXPECT_EQ(family.with({"anything"}).value(), 0);
}

TEST(Metrics, ScrapeHooksRunFirstAndZeroAllResetsGauges) {
  Registry registry;
  GaugeFamily backlog = registry.gauges("backlog", "Tasks.", {"queue"});
  backlog.with({"gone"}).set(3);
  int scrapes = 0;
  registry.on_scrape([&] {
    ++scrapes;
    backlog.zero_all();
    backlog.with({"now"}).set(scrapes);
  });
  (void)registry.scrape();
  const std::string text = registry.scrape();
  EXPECT_NE(text.find("backlog{queue=\"gone\"} 0\nbacklog{queue=\"now\"} 2\n"), std::string::npos) << text;
}

// Many threads count into the same and into new series while others
// scrape: every increment is there at the end (and TSan sees no race).
TEST(Metrics, CountsAddUpUnderConcurrency) {
  Registry registry(RegistryOptions{.max_label_values = 8});
  CounterFamily requests = registry.counters("requests_total", "x", {"op"});
  Histogram latency = registry.histograms("lat_seconds", "x", {}, latency_buckets()).with();
  constexpr int kThreads = 8, kPerThread = 20'000;
  std::vector<std::thread> threads;
  std::atomic<bool> done{false};
  std::thread scraper([&] {
    while (!done.load()) (void)registry.scrape();
  });
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        requests.with({"shared"}).inc();
        // 12 distinct values in all, past the cap of 8: some are folded.
        requests.with({"op" + std::to_string((t + i) % 12)}).inc();
        latency.observe(0.001 * (i % 100));
      }
    });
  }
  for (auto& t : threads) t.join();
  done = true;
  scraper.join();
  EXPECT_EQ(requests.with({"shared"}).value(), kThreads * kPerThread);
  int64_t spread = 0;
  for (int v = 0; v < 12; ++v) spread += requests.with({"op" + std::to_string(v)}).value();
  const int64_t other = requests.with({"__other__"}).value();
  // Kept values count once each; folded ones all land in __other__ (read
  // above once per folded value).
  const int64_t folded_values = 12 - 7;  // "shared" took one of the 8 places
  EXPECT_EQ(spread - folded_values * other + other, kThreads * kPerThread);
  EXPECT_EQ(latency.count(), kThreads * kPerThread);
}

}  // namespace
}  // namespace reprise::metrics
