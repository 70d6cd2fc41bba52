// Metrics: counters, gauges and histograms in a Registry, written out in the
// Prometheus text exposition format (version 0.0.4) by Registry::scrape().
// reprise-server serves its registry on --metrics-listen; a Worker fills the
// registry given in WorkerOptions::metrics, which the program serves or
// reads as it likes (docs/operations.md, "Metrics").
//
//   auto registry = std::make_shared<reprise::metrics::Registry>();
//   reprise::metrics::CounterFamily sent =
//       registry->counters("orders_sent_total", "Orders sent, by region.", {"region"});
//   sent.with({"eu"}).inc();
//   std::string page = registry->scrape();  // GET /metrics answers this
//
// Cardinality: a label whose values come from users (a workflow type, a
// task queue) keeps at most RegistryOptions::max_label_values distinct
// values per family; later values are counted under "__other__".
//
// Cost: inc(), set() and observe() on a handle are a few relaxed atomic
// operations on a per-thread shard, with no lock. with() finds an existing
// series without a lock; the first use of a label set, and every use of a
// value folded into "__other__", take the family's mutex.
//
// Thread safety: every method may be called from any thread at once.
// Lifetimes: handles (Counter, Gauge, Histogram and the families) point into
// their Registry and must not outlive it. A default-constructed handle does
// nothing: code can keep handles whether or not metrics are on.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "reprise/export.hpp"

namespace reprise::metrics {

namespace detail {
struct CounterCell;
struct GaugeCell;
struct HistogramCell;
struct Family;
struct RegistryState;
}  // namespace detail

class REPRISE_EXPORT Counter {
 public:
  Counter() = default;
  void inc(int64_t n = 1) const noexcept;
  // For a count kept elsewhere and copied in by an on_scrape hook: replaces
  // the value. Not for a counter that is also inc()'d.
  void set_total(int64_t total) const noexcept;
  int64_t value() const noexcept;

 private:
  friend class CounterFamily;
  explicit Counter(detail::CounterCell* cell) : cell_(cell) {}
  detail::CounterCell* cell_ = nullptr;
};

class REPRISE_EXPORT Gauge {
 public:
  Gauge() = default;
  void set(double value) const noexcept;
  void add(double delta) const noexcept;
  double value() const noexcept;

 private:
  friend class GaugeFamily;
  explicit Gauge(detail::GaugeCell* cell) : cell_(cell) {}
  detail::GaugeCell* cell_ = nullptr;
};

class REPRISE_EXPORT Histogram {
 public:
  Histogram() = default;
  void observe(double value) const noexcept;
  // In seconds, the unit of every *_seconds histogram.
  void observe(std::chrono::nanoseconds duration) const noexcept {
    observe(std::chrono::duration<double>(duration).count());
  }
  // For counts kept elsewhere and copied in by an on_scrape hook: one count
  // per bucket (not cumulative; the last is above the last bound) and their
  // sum. Replaces what was there. Not for a histogram that is also
  // observe()'d.
  void set_counts(std::span<const int64_t> per_bucket, double sum) const noexcept;
  int64_t count() const noexcept;
  double sum() const noexcept;

 private:
  friend class HistogramFamily;
  explicit Histogram(detail::HistogramCell* cell) : cell_(cell) {}
  detail::HistogramCell* cell_ = nullptr;
};

// A metric name and its label names; with() gives the series of one set of
// label values, in the order of the label names (a wrong count throws
// std::invalid_argument).
class REPRISE_EXPORT CounterFamily {
 public:
  CounterFamily() = default;
  Counter with(std::initializer_list<std::string_view> values = {}) const;
  Counter with(std::span<const std::string_view> values) const;

 private:
  friend class Registry;
  explicit CounterFamily(detail::Family* family) : family_(family) {}
  detail::Family* family_ = nullptr;
};

class REPRISE_EXPORT GaugeFamily {
 public:
  GaugeFamily() = default;
  Gauge with(std::initializer_list<std::string_view> values = {}) const;
  Gauge with(std::span<const std::string_view> values) const;
  // Sets every series of the family to 0 (an on_scrape hook that reports
  // what exists now, such as one gauge per queue, starts with this).
  void zero_all() const;

 private:
  friend class Registry;
  explicit GaugeFamily(detail::Family* family) : family_(family) {}
  detail::Family* family_ = nullptr;
};

class REPRISE_EXPORT HistogramFamily {
 public:
  HistogramFamily() = default;
  Histogram with(std::initializer_list<std::string_view> values = {}) const;
  Histogram with(std::span<const std::string_view> values) const;

 private:
  friend class Registry;
  explicit HistogramFamily(detail::Family* family) : family_(family) {}
  detail::Family* family_ = nullptr;
};

struct RegistryOptions {
  // Distinct values one label of one family keeps; the rest are folded into
  // "__other__".
  size_t max_label_values = 100;
};

// Bucket upper bounds in seconds for request and task latencies: 0.5 ms to 60 s.
REPRISE_EXPORT std::vector<double> latency_buckets();

class REPRISE_EXPORT Registry {
 public:
  explicit Registry(RegistryOptions options = {});
  ~Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // Registers a family, or returns the one of that name if it has the same
  // kind and labels (a different one throws std::invalid_argument, as does
  // a name or label name Prometheus does not accept, or a counter whose name
  // does not end in _total). `help` is one line of text.
  CounterFamily counters(std::string name, std::string help, std::vector<std::string> label_names = {});
  GaugeFamily gauges(std::string name, std::string help, std::vector<std::string> label_names = {});
  // `bounds`: the buckets' upper bounds, increasing; +Inf is added.
  HistogramFamily histograms(std::string name, std::string help, std::vector<std::string> label_names,
                             std::vector<double> bounds);

  // Runs at the start of every scrape(), in the order added, one scrape at a
  // time: for values read from elsewhere (queue lengths, file sizes). Must
  // not call scrape().
  void on_scrape(std::function<void()> hook);

  // Every family in the order registered, its series sorted by label values,
  // in the text exposition format (Content-Type: text/plain; version=0.0.4).
  std::string scrape() const;

 private:
  std::unique_ptr<detail::RegistryState> state_;
};

}  // namespace reprise::metrics
