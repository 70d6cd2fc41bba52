// The standard library calls the user's code: the visitor std::visit
// invokes, the functor a numeric algorithm applies, the operator< std::sort
// compares with, the destructor a container runs on its elements. The
// linter follows the user's functions an instantiation reaches, without
// reporting what the library itself does.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <map>
#include <numeric>
#include <variant>
#include <vector>

#include "reprise/workflow.hpp"

struct AgeInSeconds {
  long operator()(int created) const { return std::time(nullptr) - created; }
  long operator()(double) const { return 0; }
};

struct AddWithJitter {
  long operator()(long total, int x) const { return total + x + std::rand() % 2; }
};

struct Task {
  int priority;
  bool operator<(const Task& other) const {
    return priority < other.priority && std::chrono::steady_clock::now().time_since_epoch().count() % 2 == 0;
  }
};

struct Entry {
  int id = 0;
  ~Entry() { std::puts("entry gone"); }
};

reprise::Workflow<long> library_calls_user_code(reprise::WorkflowContext&, std::vector<int> xs) {
  std::variant<int, double> v = 3;
  long age = std::visit(AgeInSeconds{}, v);                               // expect: reprise-clock
  long sum = std::accumulate(xs.begin(), xs.end(), 0L, AddWithJitter{});  // expect: reprise-random
  std::vector<Task> tasks{{1}, {2}};
  std::sort(tasks.begin(), tasks.end());      // expect: reprise-clock
  std::map<int, std::vector<Entry>> entries;  // expect: reprise-logging
  co_return age + sum + tasks[0].priority + static_cast<long>(entries.size());
}

// Negative: clean user code called by the library, and library calls on
// plain values.
struct Doubled {
  long operator()(int x) const { return 2L * x; }
  long operator()(double) const { return 0; }
};
struct Plain {
  int key;
  bool operator<(const Plain& other) const { return key < other.key; }
};

reprise::Workflow<long> library_calls_clean_code(reprise::WorkflowContext&, std::vector<int> xs) {
  std::variant<int, double> v = 3;
  std::vector<Plain> plain{{2}, {1}};
  std::sort(plain.begin(), plain.end());
  std::sort(xs.begin(), xs.end());
  long total = std::accumulate(xs.begin(), xs.end(), 0L);
  co_return std::visit(Doubled{}, v) + total + plain[0].key;
}
