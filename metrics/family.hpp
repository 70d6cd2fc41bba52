// The inside of a metrics Registry (reprise/metrics.hpp): the cells a
// handle updates, and a family's series with the index that finds them
// without a lock.
//
// Cells are sharded: each thread adds to one of kShards cache-line-sized
// slots, so threads counting the same series do not fight over one line; a
// scrape adds the shards up.
//
// Thread safety: cells any thread; a Family's `mu` guards its series map and
// the seen label values; `index` is read without it.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace reprise::metrics::detail {

inline constexpr int kShards = 8;

// This thread's shard, fixed for its life.
int shard_index();

struct alignas(64) CounterShard {
  std::atomic<int64_t> value{0};
};

struct CounterCell {
  CounterShard shards[kShards];
  int64_t total() const;
};

struct GaugeCell {
  std::atomic<double> value{0};
};

struct alignas(64) HistogramShard {
  std::unique_ptr<std::atomic<int64_t>[]> buckets;  // one per bound, then +Inf; not cumulative
  std::atomic<double> sum{0};
};

struct HistogramCell {
  explicit HistogramCell(const std::vector<double>& bounds);
  const std::vector<double>& bounds;
  HistogramShard shards[kShards];
  // Per-bucket counts summed over the shards, and their sum.
  std::vector<int64_t> counts() const;
  double total_sum() const;
};

enum class Kind { kCounter, kGauge, kHistogram };

// One series: its label values and the cell of the family's kind.
struct Series {
  std::vector<std::string> values;
  std::unique_ptr<CounterCell> counter;
  std::unique_ptr<GaugeCell> gauge;
  std::unique_ptr<HistogramCell> histogram;
};

// An open-addressing table from the joined label values to their series,
// written only under the family's mutex and read without it. It is never
// changed in place once full enough: a bigger one replaces it, and the old
// one stays alive (a reader may hold it) until the family goes; the sizes
// double, so all of them together are at most twice the last.
struct Index {
  struct Entry {
    std::string key;
    Series* series;
  };
  explicit Index(size_t capacity) : slots(capacity) {}
  std::vector<std::atomic<const Entry*>> slots;  // the entries are the family's
  const Series* find(std::string_view key) const;
};

struct Family {
  Family(std::string name, std::string help, Kind kind, std::vector<std::string> label_names,
         std::vector<double> bounds, size_t max_label_values);

  // The series of these values, made on first use; values past the cap
  // become "__other__".
  Series& series(std::span<const std::string_view> values);

  const std::string name;
  const std::string help;
  const Kind kind;
  const std::vector<std::string> label_names;
  const std::vector<double> bounds;  // histograms only
  const size_t max_label_values;

  mutable std::mutex mu;
  std::map<std::vector<std::string>, Series> by_values;  // sorted, for the scrape
  std::vector<std::unordered_set<std::string>> seen;     // per label: values kept

 private:
  Series& make_series_locked(std::span<const std::string_view> values, const std::string& key);
  void add_to_index_locked(const std::string& key, Series* series);

  std::atomic<const Index*> index_;
  std::vector<std::unique_ptr<Index>> indexes_;  // the current one last
  std::vector<std::unique_ptr<const Index::Entry>> entries_;
};

// The key of a set of label values in an Index: joined by a byte that UTF-8
// text never holds.
std::string join_values(std::span<const std::string_view> values);

}  // namespace reprise::metrics::detail
