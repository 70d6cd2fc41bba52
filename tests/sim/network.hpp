// The simulated network between the simulator's clients and workers and
// the engine: each request and reply crosses with a random delay, and while
// faults are on may be dropped or the request duplicated; the caller gives
// up at its timeout, as an RPC deadline does.
//
// Thread safety: none; the simulator's thread only.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "history/status.hpp"
#include "scheduler.hpp"
#include "sim_server.hpp"

namespace reprise::sim {

class Network {
 public:
  using Engine = engine::Engine;
  Network(Scheduler& s, Server& server) : s_(s), server_(server) {}
  void set_faults(bool on) { faults_ = on; }

  template <typename Resp>
  using Invoke = std::function<void(Engine&, engine::Reply<Resp>)>;

  template <typename Resp>
  void call(const std::string& what, Invoke<Resp> invoke, Duration timeout, std::function<void(Result<Resp>)> done) {
    auto finished = std::make_shared<bool>(false);
    auto finish = [finished, done = std::move(done)](Result<Resp> r) {
      if (std::exchange(*finished, true)) return;
      done(std::move(r));
    };
    s_.after(timeout, what + " timeout", [finish] { finish(Status::deadline_exceeded("simulated call timed out")); });
    const int copies = faults_ && s_.chance(0.03) ? 2 : 1;
    for (int i = 0; i < copies; ++i) {
      if (faults_ && s_.chance(0.03)) continue;  // the request is lost
      s_.after(s_.random_duration(std::chrono::milliseconds(0), std::chrono::milliseconds(20)), what,
               [this, what, invoke, finish] {
                 if (!server_.up()) {
                   s_.after(s_.random_duration(std::chrono::milliseconds(0), std::chrono::milliseconds(5)),
                            what + " refused",
                            [finish] { finish(Status::unavailable("simulated connection refused")); });
                   return;
                 }
                 const int incarnation = server_.incarnation();
                 invoke(server_.engine(), [this, what, finish, incarnation](Result<Resp> r) {
                   if (!server_.up() || server_.incarnation() != incarnation) return;  // died with the process
                   if (faults_ && s_.chance(0.03)) return;                             // the reply is lost
                   s_.after(s_.random_duration(std::chrono::milliseconds(0), std::chrono::milliseconds(20)),
                            what + " reply", [finish, r] { finish(r); });
                 });
               });
    }
  }

 private:
  Scheduler& s_;
  Server& server_;
  bool faults_ = false;
};

// What a caller retries: the server was away, busy or too slow.
inline bool transient(const Status& s) {
  switch (s.code()) {
    case StatusCode::kDeadlineExceeded:
    case StatusCode::kUnavailable:
    case StatusCode::kResourceExhausted:
    case StatusCode::kAborted:
      return true;
    default:
      return false;
  }
}

}  // namespace reprise::sim
