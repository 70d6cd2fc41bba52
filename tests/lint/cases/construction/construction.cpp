// C++ runs code no call in the workflow names: the constructors and
// destructors of members and bases, default member initializers (also under
// aggregate initialization), and the constructors and destructors the
// compiler writes for a class. All of it is followed.
#include <chrono>
#include <cstdio>
#include <ctime>
#include <string>

#include "reprise/workflow.hpp"

// Each class below reaches its own clock: a workflow reports a function's
// finding once, through the shortest chain.

// A member whose own constructor reads the clock.
struct Stamp {
  Stamp() : at(std::time(nullptr)) {}
  long at;
};
struct Order {  // its constructor is implicit
  int id = 0;
  Stamp created;
};

// A base whose constructor reads the clock.
struct Audited {
  Audited() { std::puts("audited"); }
};
struct Invoice : Audited {
  int total = 0;
};

// A default member initializer that reads the clock.
struct Shipment {
  int id;
  long queued_at = std::chrono::system_clock::now().time_since_epoch().count();
};

// The same, default-initialized: the implicit constructor runs it.
struct Parcel {
  int id;
  long weighed_at = std::chrono::steady_clock::now().time_since_epoch().count();
};

// RAII timers: a member's and a base's destructor read the clock.
struct ScopeTimer {
  ~ScopeTimer() { std::printf("%ld\n", static_cast<long>(std::clock())); }
};
struct Step {
  ScopeTimer timer;
  int n = 0;
};
struct BaseTimer {
  ~BaseTimer() { std::puts(std::to_string(std::time(nullptr)).c_str()); }
};
struct TimedStep : BaseTimer {
  int n = 0;
};

// A written constructor that leaves a member to its default initializer.
struct Batch {
  explicit Batch(int n) : size(n) {}
  int size;
  long opened = std::time(nullptr);
};

reprise::Workflow<long> builds_things(reprise::WorkflowContext&) {
  Order order;           // expect: reprise-clock
  Invoice invoice;       // expect: reprise-logging
  Shipment shipment{7};  // expect: reprise-clock
  Parcel parcel;         // expect: reprise-clock
  Step step;             // expect: reprise-clock reprise-logging
  TimedStep timed;       // expect: reprise-clock reprise-logging
  Batch batch(3);        // expect: reprise-clock
  co_return order.id + invoice.total + shipment.id + parcel.id + step.n + timed.n + batch.size;
}

// Negative: the same shapes, with nothing to find.
struct Quiet {
  Quiet() : n(1) {}
  ~Quiet() { n = 0; }
  int n;
};
struct Holder : Quiet {
  Quiet member;
  int count = 2;
};
// A default initializer the constructor replaces never runs.
struct Replaced {
  Replaced() : opened(0) {}
  long opened = std::time(nullptr);
};
// An aggregate initialization that names the member does not run its default.
struct Named {
  long at = std::time(nullptr);
};

reprise::Workflow<long> builds_quietly(reprise::WorkflowContext&) {
  Holder holder;
  Replaced replaced;
  Named named{5};
  co_return holder.count + holder.member.n + replaced.opened + named.at;
}
