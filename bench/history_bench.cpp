// History batch encode/decode throughput, plain and zstd, in events/s.
//   ./run bench Batch      (or build-release/bench/history_bench)
#include <benchmark/benchmark.h>

#include "history/batch_codec.hpp"
#include "history/event_builder.hpp"

namespace reprise::history {
namespace {

// A realistic mix: activity schedule/start/complete triples with small JSON
// inputs and results, like a fan-out workflow's history.
std::vector<v1::HistoryEvent> sample_events(int count) {
  HistoryBuilder b(1, from_unix_nanos(1'700'000'000'000'000'000));
  for (int i = 0; b.next_event_id() <= count; ++i) {
    auto* s = b.add(&v1::HistoryEvent::mutable_activity_task_scheduled);
    s->set_activity_id(std::to_string(i));
    s->mutable_activity_type()->set_name("charge_card");
    s->mutable_task_queue()->set_name("payments");
    s->mutable_start_to_close_timeout()->set_seconds(30);
    s->mutable_input()->add_payloads()->set_data(R"({"order":"ord-)" + std::to_string(100000 + i) +
                                                 R"(","cents":4599,"currency":"EUR"})");
    if (b.next_event_id() > count) break;
    b.add(&v1::HistoryEvent::mutable_activity_task_started)->set_scheduled_event_id(b.next_event_id() - 1);
    if (b.next_event_id() > count) break;
    auto* c = b.add(&v1::HistoryEvent::mutable_activity_task_completed);
    c->set_scheduled_event_id(b.next_event_id() - 3);
    c->mutable_result()->add_payloads()->set_data(R"({"receipt":"rcpt-)" + std::to_string(i * 7919) + R"("})");
  }
  return b.take();
}

BatchCodecOptions options_for(bool zstd) {
  BatchCodecOptions o;
  o.compress_threshold = zstd ? 0 : SIZE_MAX;
  return o;
}

void BM_BatchEncode(benchmark::State& state) {
  const auto events = sample_events(static_cast<int>(state.range(0)));
  EventBatchCodec codec(options_for(state.range(1) != 0));
  size_t encoded_bytes = 0;
  for (auto _ : state) {
    Result<std::string> r = codec.encode(events);
    encoded_bytes = r->size();
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(events.size()));
  state.counters["bytes_per_event"] = static_cast<double>(encoded_bytes) / static_cast<double>(events.size());
}

void BM_BatchDecode(benchmark::State& state) {
  const auto events = sample_events(static_cast<int>(state.range(0)));
  EventBatchCodec codec(options_for(state.range(1) != 0));
  const std::string encoded = *codec.encode(events);
  for (auto _ : state) {
    v1::History h;
    Status s = codec.decode(encoded, h);
    benchmark::DoNotOptimize(s);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(events.size()));
}

// Args: events per batch, zstd (0/1).
BENCHMARK(BM_BatchEncode)->ArgNames({"events", "zstd"})->ArgsProduct({{16, 256}, {0, 1}});
BENCHMARK(BM_BatchDecode)->ArgNames({"events", "zstd"})->ArgsProduct({{16, 256}, {0, 1}});

}  // namespace
}  // namespace reprise::history

BENCHMARK_MAIN();
