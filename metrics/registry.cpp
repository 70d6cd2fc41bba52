// The Registry's families and the handles that update their cells
// (reprise/metrics.hpp); the text it writes is exposition.cpp's.
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "metrics/family.hpp"
#include "metrics/registry_state.hpp"
#include "reprise/metrics.hpp"

namespace reprise::metrics {

namespace detail {

int shard_index() {
  static std::atomic<int> next{0};
  thread_local const int index = next.fetch_add(1, std::memory_order_relaxed) % kShards;
  return index;
}

int64_t CounterCell::total() const {
  int64_t sum = 0;
  for (const CounterShard& s : shards) sum += s.value.load(std::memory_order_relaxed);
  return sum;
}

HistogramCell::HistogramCell(const std::vector<double>& b) : bounds(b) {
  for (HistogramShard& s : shards) {
    s.buckets = std::make_unique<std::atomic<int64_t>[]>(bounds.size() + 1);
  }
}

std::vector<int64_t> HistogramCell::counts() const {
  std::vector<int64_t> out(bounds.size() + 1, 0);
  for (const HistogramShard& s : shards) {
    for (size_t i = 0; i < out.size(); ++i) out[i] += s.buckets[i].load(std::memory_order_relaxed);
  }
  return out;
}

double HistogramCell::total_sum() const {
  double sum = 0;
  for (const HistogramShard& s : shards) sum += s.sum.load(std::memory_order_relaxed);
  return sum;
}

std::string join_values(std::span<const std::string_view> values) {
  std::string key;
  for (std::string_view v : values) {
    key.append(v);
    key.push_back('\xff');
  }
  return key;
}

const Series* Index::find(std::string_view key) const {
  const size_t mask = slots.size() - 1;
  for (size_t i = std::hash<std::string_view>()(key) & mask;; i = (i + 1) & mask) {
    const Entry* e = slots[i].load(std::memory_order_acquire);
    if (e == nullptr) return nullptr;
    if (e->key == key) return e->series;
  }
}

Family::Family(std::string n, std::string h, Kind k, std::vector<std::string> labels, std::vector<double> b,
               size_t max_values)
    : name(std::move(n)),
      help(std::move(h)),
      kind(k),
      label_names(std::move(labels)),
      bounds(std::move(b)),
      max_label_values(max_values),
      seen(label_names.size()) {
  indexes_.push_back(std::make_unique<Index>(16));
  index_.store(indexes_.back().get(), std::memory_order_release);
}

Series& Family::series(std::span<const std::string_view> values) {
  if (values.size() != label_names.size()) {
    throw std::invalid_argument("metric " + name + " has " + std::to_string(label_names.size()) + " labels, given " +
                                std::to_string(values.size()) + " values");
  }
  const std::string key = join_values(values);
  if (const Series* found = index_.load(std::memory_order_acquire)->find(key)) return const_cast<Series&>(*found);
  std::lock_guard lock(mu);
  return make_series_locked(values, key);
}

Series& Family::make_series_locked(std::span<const std::string_view> values, const std::string& key) {
  std::vector<std::string> kept(values.begin(), values.end());
  bool folded = false;
  for (size_t i = 0; i < kept.size(); ++i) {
    if (seen[i].contains(kept[i])) continue;
    if (seen[i].size() < max_label_values) {
      seen[i].insert(kept[i]);
    } else {
      kept[i] = "__other__";
      folded = true;
    }
  }
  auto [it, made] = by_values.try_emplace(kept);
  Series& s = it->second;
  if (made) {
    s.values = kept;
    if (kind == Kind::kCounter) s.counter = std::make_unique<CounterCell>();
    if (kind == Kind::kGauge) s.gauge = std::make_unique<GaugeCell>();
    if (kind == Kind::kHistogram) s.histogram = std::make_unique<HistogramCell>(bounds);
  }
  // A folded value is not indexed: the index holds kept values only, so its
  // size is bounded by the cap.
  if (!folded) add_to_index_locked(key, &s);
  return s;
}

void Family::add_to_index_locked(const std::string& key, Series* series) {
  Index* index = indexes_.back().get();
  if (index->find(key) != nullptr) return;
  entries_.push_back(std::make_unique<const Index::Entry>(Index::Entry{key, series}));
  // At most half full, so a probe ends soon at an empty slot.
  if (entries_.size() * 2 > index->slots.size()) {
    indexes_.push_back(std::make_unique<Index>(index->slots.size() * 2));
    index = indexes_.back().get();
    for (size_t i = 0; i + 1 < entries_.size(); ++i) {
      const Index::Entry* e = entries_[i].get();
      const size_t mask = index->slots.size() - 1;
      size_t slot = std::hash<std::string_view>()(e->key) & mask;
      while (index->slots[slot].load(std::memory_order_relaxed) != nullptr) slot = (slot + 1) & mask;
      index->slots[slot].store(e, std::memory_order_relaxed);
    }
    index_.store(index, std::memory_order_release);  // publishes the copied slots too
  }
  const Index::Entry* e = entries_.back().get();
  const size_t mask = index->slots.size() - 1;
  size_t slot = std::hash<std::string_view>()(e->key) & mask;
  while (index->slots[slot].load(std::memory_order_relaxed) != nullptr) slot = (slot + 1) & mask;
  index->slots[slot].store(e, std::memory_order_release);
}

namespace {

bool valid_name(std::string_view name, bool colons) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colons && c == ':') ||
                    (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

void check_labels(const std::string& metric, const std::vector<std::string>& labels) {
  for (size_t i = 0; i < labels.size(); ++i) {
    if (!valid_name(labels[i], false) || labels[i].starts_with("__") || labels[i] == "le") {
      throw std::invalid_argument("metric " + metric + ": label name '" + labels[i] + "' is not allowed");
    }
    if (std::find(labels.begin(), labels.begin() + static_cast<std::ptrdiff_t>(i), labels[i]) !=
        labels.begin() + static_cast<std::ptrdiff_t>(i)) {
      throw std::invalid_argument("metric " + metric + ": label '" + labels[i] + "' given twice");
    }
  }
}

}  // namespace

Family* RegistryState::add(std::string name, std::string help, Kind kind, std::vector<std::string> labels,
                           std::vector<double> bounds) {
  if (!valid_name(name, true)) throw std::invalid_argument("metric name '" + name + "' is not allowed");
  if (kind == Kind::kCounter && !name.ends_with("_total")) {
    throw std::invalid_argument("counter " + name + " must end in _total");
  }
  check_labels(name, labels);
  if (kind == Kind::kHistogram && (bounds.empty() || !std::is_sorted(bounds.begin(), bounds.end()) ||
                                   std::adjacent_find(bounds.begin(), bounds.end()) != bounds.end())) {
    throw std::invalid_argument("histogram " + name + " needs increasing bucket bounds");
  }
  if (help.find('\n') != std::string::npos) throw std::invalid_argument("help of " + name + " is one line");
  std::lock_guard lock(mu);
  for (const auto& f : families) {
    if (f->name != name) continue;
    if (f->kind != kind || f->label_names != labels || f->bounds != bounds) {
      throw std::invalid_argument("metric " + name + " is registered already with other labels or kind");
    }
    return f.get();
  }
  families.push_back(std::make_unique<Family>(std::move(name), std::move(help), kind, std::move(labels),
                                              std::move(bounds), options.max_label_values));
  return families.back().get();
}

}  // namespace detail

void Counter::inc(int64_t n) const noexcept {
  if (cell_ != nullptr) cell_->shards[detail::shard_index()].value.fetch_add(n, std::memory_order_relaxed);
}

void Counter::set_total(int64_t total) const noexcept {
  if (cell_ == nullptr) return;
  for (int i = 1; i < detail::kShards; ++i) cell_->shards[i].value.store(0, std::memory_order_relaxed);
  cell_->shards[0].value.store(total, std::memory_order_relaxed);
}

int64_t Counter::value() const noexcept { return cell_ != nullptr ? cell_->total() : 0; }

void Gauge::set(double value) const noexcept {
  if (cell_ != nullptr) cell_->value.store(value, std::memory_order_relaxed);
}

void Gauge::add(double delta) const noexcept {
  if (cell_ != nullptr) cell_->value.fetch_add(delta, std::memory_order_relaxed);
}

double Gauge::value() const noexcept { return cell_ != nullptr ? cell_->value.load(std::memory_order_relaxed) : 0; }

void Histogram::observe(double value) const noexcept {
  if (cell_ == nullptr) return;
  const std::vector<double>& bounds = cell_->bounds;
  // The first bucket whose bound is >= value (Prometheus' le); NaN goes to +Inf.
  const size_t bucket =
      std::isnan(value) ? bounds.size()
                        : static_cast<size_t>(std::lower_bound(bounds.begin(), bounds.end(), value) - bounds.begin());
  detail::HistogramShard& shard = cell_->shards[detail::shard_index()];
  shard.buckets[bucket].fetch_add(1, std::memory_order_relaxed);
  shard.sum.fetch_add(value, std::memory_order_relaxed);
}

void Histogram::set_counts(std::span<const int64_t> per_bucket, double sum) const noexcept {
  if (cell_ == nullptr) return;
  for (detail::HistogramShard& s : cell_->shards) {
    for (size_t i = 0; i <= cell_->bounds.size(); ++i) s.buckets[i].store(0, std::memory_order_relaxed);
    s.sum.store(0, std::memory_order_relaxed);
  }
  for (size_t i = 0; i <= cell_->bounds.size() && i < per_bucket.size(); ++i) {
    cell_->shards[0].buckets[i].store(per_bucket[i], std::memory_order_relaxed);
  }
  cell_->shards[0].sum.store(sum, std::memory_order_relaxed);
}

int64_t Histogram::count() const noexcept {
  if (cell_ == nullptr) return 0;
  int64_t n = 0;
  for (int64_t c : cell_->counts()) n += c;
  return n;
}

double Histogram::sum() const noexcept { return cell_ != nullptr ? cell_->total_sum() : 0; }

Counter CounterFamily::with(std::initializer_list<std::string_view> values) const {
  return with(std::span<const std::string_view>(values.begin(), values.size()));
}
Counter CounterFamily::with(std::span<const std::string_view> values) const {
  return family_ != nullptr ? Counter(family_->series(values).counter.get()) : Counter();
}

Gauge GaugeFamily::with(std::initializer_list<std::string_view> values) const {
  return with(std::span<const std::string_view>(values.begin(), values.size()));
}
Gauge GaugeFamily::with(std::span<const std::string_view> values) const {
  return family_ != nullptr ? Gauge(family_->series(values).gauge.get()) : Gauge();
}
void GaugeFamily::zero_all() const {
  if (family_ == nullptr) return;
  std::lock_guard lock(family_->mu);
  for (auto& [values, series] : family_->by_values) series.gauge->value.store(0, std::memory_order_relaxed);
}

Histogram HistogramFamily::with(std::initializer_list<std::string_view> values) const {
  return with(std::span<const std::string_view>(values.begin(), values.size()));
}
Histogram HistogramFamily::with(std::span<const std::string_view> values) const {
  return family_ != nullptr ? Histogram(family_->series(values).histogram.get()) : Histogram();
}

std::vector<double> latency_buckets() {
  return {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
}

Registry::Registry(RegistryOptions options) : state_(std::make_unique<detail::RegistryState>()) {
  state_->options = options;
}

Registry::~Registry() = default;

CounterFamily Registry::counters(std::string name, std::string help, std::vector<std::string> label_names) {
  return CounterFamily(
      state_->add(std::move(name), std::move(help), detail::Kind::kCounter, std::move(label_names), {}));
}

GaugeFamily Registry::gauges(std::string name, std::string help, std::vector<std::string> label_names) {
  return GaugeFamily(state_->add(std::move(name), std::move(help), detail::Kind::kGauge, std::move(label_names), {}));
}

HistogramFamily Registry::histograms(std::string name, std::string help, std::vector<std::string> label_names,
                                     std::vector<double> bounds) {
  return HistogramFamily(state_->add(std::move(name), std::move(help), detail::Kind::kHistogram, std::move(label_names),
                                     std::move(bounds)));
}

void Registry::on_scrape(std::function<void()> hook) {
  std::lock_guard lock(state_->scrape_mu);
  state_->hooks.push_back(std::move(hook));
}

}  // namespace reprise::metrics
