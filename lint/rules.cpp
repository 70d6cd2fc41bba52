#include "lint/rules.hpp"

#include <fnmatch.h>

#include <stdexcept>
#include <utility>

namespace reprise::lint {

const std::vector<Rule>& all_rules() {
  static const std::vector<Rule> rules = {
      {"reprise-clock", Severity::kError, "is non-deterministic: it reads the clock",
       "use ctx.now(), the time recorded for this workflow task",
       "A workflow is replayed from its history after a cache miss, a crash or a deploy. A clock read returns another "
       "time on replay, so the code can take another branch and the replay no longer matches the history."},
      {"reprise-random", Severity::kError, "is non-deterministic: it draws randomness",
       "use ctx.random() or ctx.uuid() (a generator seeded from ctx.random() is fine)",
       "A random draw gives another value on replay, so the code can take another branch and the replay no longer "
       "matches the history."},
      {"reprise-blocking", Severity::kError, "blocks its thread",
       "wait with co_await ctx.sleep(), a signal or an activity future",
       "Sleeping, locking or waiting holds a worker thread and leaves no trace in the history; a wait that lasts must "
       "be a durable timer, a signal or an activity."},
      {"reprise-thread", Severity::kError, "starts a thread or a process",
       "run concurrent work with ctx.spawn() or as activities",
       "A thread, async task or process runs outside the workflow's history: its work is neither recorded nor "
       "replayed, and it may run again on every replay."},
      {"reprise-io", Severity::kError, "does I/O or reads the environment",
       "move it into an activity and call it with ctx.execute()",
       "Files, sockets, the environment and processes can answer differently on replay, and the I/O runs again on "
       "every replay: it belongs in an activity, whose result is recorded."},
      {"reprise-logging", Severity::kWarning, "logs outside ctx.logger(), so it logs again on every replay",
       "use ctx.logger(), which is quiet while replaying",
       "Workflow code runs again on every replay, so a plain log line is printed again each time; ctx.logger() is "
       "quiet while replaying."},
      {"reprise-global-write", Severity::kError, "writes state with static storage duration",
       "keep workflow state in the workflow's own variables",
       "State with static storage duration outlives the workflow run: a replay in the same process sees what earlier "
       "runs left in it."},
      {"reprise-global-read", Severity::kWarning, "reads a mutable global, which may differ on replay",
       "pass the value in as a workflow argument, or make it const",
       "A mutable global may hold another value when the workflow is replayed, in this process or another one."},
      {"reprise-unordered-iteration", Severity::kWarning, "iterates an unordered container, whose order may differ",
       "iterate a std::map or std::set, or sort the keys first",
       "An unordered container's iteration order may change with the library, the insertion history or the bucket "
       "count, and with it the order the workflow starts its work."},
      {"reprise-pointer-order", Severity::kError, "orders by pointer (a container, queue or sort ordered by address)",
       "order by a stable id, not an address",
       "Addresses differ on every run, so an order by address is another order on replay."},
      {"reprise-address", Severity::kError, "depends on an address, which differs on replay",
       "compare and hash stable ids, not pointers",
       "Addresses differ on every run: comparing, hashing or printing them gives another result on replay."},
      {"reprise-evaluation-order", Severity::kWarning,
       "starts work in two operands whose order the compiler chooses, so history may differ between builds",
       "start each in a statement of its own, in the order history should record",
       "C++ leaves the order of these operands to the compiler; work started in both reaches history in that order, "
       "which another compiler, version or flag may not repeat."},
      {"reprise-direct-activity", Severity::kError, "calls an activity function directly, outside history",
       "call it through its handle: co_await ctx.execute(handle, options, args...)",
       "An activity called as a function runs inside the workflow task, on every replay, and its result is not "
       "recorded in the history."},
      {"reprise-untyped-activity", Severity::kError, "schedules an activity by a name it builds, not a typed handle",
       "declare `constexpr reprise::Activity<&fn> handle{\"name\"}` and call ctx.execute(handle, ...)",
       "The history records whatever name the string held; a name built at run time can differ on replay and cannot be "
       "checked against the activity's signature."},
      {"reprise-denied", Severity::kError, "calls a function the lint config denies",
       "see the deny list in the lint config",
       "The project's lint config lists this function as not to be called from workflow code."},
      {"reprise-unresolved", Severity::kWarning, "makes a call the linter cannot follow (--strict)",
       "make the call direct, or list the target under `allow` in the config",
       "A call through a function pointer, a std::function or a virtual call whose overrides are not all in sight: the "
       "linter cannot see what runs, so it cannot check it."},
  };
  return rules;
}

const Rule& rule(std::string_view id) {
  for (const auto& r : all_rules()) {
    if (r.id == id) return r;
  }
  throw std::invalid_argument("unknown rule id '" + std::string(id) + "'");
}

bool glob_match(const std::string& pattern, const std::string& text) {
  return fnmatch(pattern.c_str(), text.c_str(), 0) == 0;
}

namespace {

using Patterns = std::vector<std::pair<std::string_view, std::string_view>>;  // pattern, rule

// Functions (and constructors: "T::T", members: "T::*") that break replay.
// The first match wins; an empty rule marks an exception to a later pattern.
const Patterns& callee_patterns() {
  static const Patterns patterns = {
      // clocks (std::chrono::file_clock is libstdc++'s std::filesystem::__file_clock)
      {"std::chrono::*::now", "reprise-clock"},
      {"std::filesystem::*clock::now", "reprise-clock"},
      {"time", "reprise-clock"},
      {"clock", "reprise-clock"},
      {"gettimeofday", "reprise-clock"},
      {"clock_gettime", "reprise-clock"},
      {"timespec_get", "reprise-clock"},
      {"ftime", "reprise-clock"},
      {"localtime", "reprise-clock"},
      {"localtime_r", "reprise-clock"},
      {"gmtime", "reprise-clock"},
      {"gmtime_r", "reprise-clock"},
      {"mktime", "reprise-clock"},
      // randomness
      {"rand", "reprise-random"},
      {"srand", "reprise-random"},
      {"rand_r", "reprise-random"},
      {"random", "reprise-random"},
      {"srandom", "reprise-random"},
      {"*rand48", "reprise-random"},
      {"getrandom", "reprise-random"},
      {"getentropy", "reprise-random"},
      {"arc4random*", "reprise-random"},
      {"std::random_device::*", "reprise-random"},
      // sleeping and blocking
      {"std::this_thread::sleep_for", "reprise-blocking"},
      {"std::this_thread::sleep_until", "reprise-blocking"},
      {"std::this_thread::yield", "reprise-blocking"},
      {"sleep", "reprise-blocking"},
      {"usleep", "reprise-blocking"},
      {"nanosleep", "reprise-blocking"},
      {"clock_nanosleep", "reprise-blocking"},
      {"std::*mutex::lock", "reprise-blocking"},
      {"std::*mutex::lock_shared", "reprise-blocking"},
      {"std::*mutex::try_lock*", "reprise-blocking"},
      {"std::lock_guard::lock_guard", "reprise-blocking"},
      {"std::unique_lock::unique_lock", "reprise-blocking"},
      {"std::unique_lock::lock", "reprise-blocking"},
      {"std::scoped_lock::scoped_lock", "reprise-blocking"},
      {"std::shared_lock::shared_lock", "reprise-blocking"},
      {"std::lock", "reprise-blocking"},
      {"std::condition_variable*::wait*", "reprise-blocking"},
      {"std::future::wait*", "reprise-blocking"},
      {"std::__basic_future::wait*", "reprise-blocking"},  // libstdc++ declares future's waits in this base
      {"std::future::get", "reprise-blocking"},
      {"std::shared_future::wait*", "reprise-blocking"},
      {"std::shared_future::get", "reprise-blocking"},
      {"std::counting_semaphore::acquire", "reprise-blocking"},
      {"std::latch::wait", "reprise-blocking"},
      {"std::latch::arrive_and_wait", "reprise-blocking"},
      {"std::barrier::arrive_and_wait", "reprise-blocking"},
      {"std::thread::join", "reprise-blocking"},
      {"std::jthread::join", "reprise-blocking"},
      {"pthread_mutex_lock", "reprise-blocking"},
      {"pthread_cond_*wait", "reprise-blocking"},
      {"pthread_join", "reprise-blocking"},
      {"sem_wait", "reprise-blocking"},
      // threads, async, processes
      {"std::thread::thread", "reprise-thread"},
      {"std::jthread::jthread", "reprise-thread"},
      {"std::async", "reprise-thread"},
      {"pthread_create", "reprise-thread"},
      {"fork", "reprise-thread"},
      {"vfork", "reprise-thread"},
      {"posix_spawn*", "reprise-thread"},
      // I/O, environment, processes
      {"std::basic_ifstream::*", "reprise-io"},
      {"std::basic_ofstream::*", "reprise-io"},
      {"std::basic_fstream::*", "reprise-io"},
      {"std::basic_filebuf::*", "reprise-io"},
      // Paths are values (joined with operator/, compared), and so are a
      // file clock's conversions; the functions that touch the disk are not.
      {"std::filesystem::path::*", ""},
      {"std::filesystem::operator*", ""},
      {"std::filesystem::*clock::*", ""},
      {"std::filesystem::*", "reprise-io"},
      {"fopen", "reprise-io"},
      {"fopen64", "reprise-io"},
      {"freopen", "reprise-io"},
      {"fread", "reprise-io"},
      {"fwrite", "reprise-io"},
      {"fgets", "reprise-io"},
      {"fscanf", "reprise-io"},
      {"scanf", "reprise-io"},
      {"getline", "reprise-io"},
      {"open", "reprise-io"},
      {"open64", "reprise-io"},
      {"openat", "reprise-io"},
      {"read", "reprise-io"},
      {"write", "reprise-io"},
      {"pread", "reprise-io"},
      {"pwrite", "reprise-io"},
      {"close", "reprise-io"},
      {"stat", "reprise-io"},
      {"opendir", "reprise-io"},
      {"readdir", "reprise-io"},
      {"unlink", "reprise-io"},
      {"socket", "reprise-io"},
      {"connect", "reprise-io"},
      {"bind", "reprise-io"},
      {"listen", "reprise-io"},
      {"accept", "reprise-io"},
      {"send", "reprise-io"},
      {"sendto", "reprise-io"},
      {"recv", "reprise-io"},
      {"recvfrom", "reprise-io"},
      {"getaddrinfo", "reprise-io"},
      {"gethostbyname", "reprise-io"},
      {"getenv", "reprise-io"},
      {"secure_getenv", "reprise-io"},
      {"std::getenv", "reprise-io"},
      {"setenv", "reprise-io"},
      {"putenv", "reprise-io"},
      {"system", "reprise-io"},
      {"std::system", "reprise-io"},
      {"popen", "reprise-io"},
      {"execl", "reprise-io"},
      {"execle", "reprise-io"},
      {"execlp", "reprise-io"},
      {"execv", "reprise-io"},
      {"execve", "reprise-io"},
      {"execvp", "reprise-io"},
      {"execvpe", "reprise-io"},
      {"getpid", "reprise-io"},
      // replay-unaware logging
      {"printf", "reprise-logging"},
      {"fprintf", "reprise-logging"},
      {"vprintf", "reprise-logging"},
      {"vfprintf", "reprise-logging"},
      {"puts", "reprise-logging"},
      {"fputs", "reprise-logging"},
      {"putchar", "reprise-logging"},
      {"perror", "reprise-logging"},
      {"syslog", "reprise-logging"},
      {"vsyslog", "reprise-logging"},
      {"spdlog::*", "reprise-logging"},
      {"fmt::print", "reprise-logging"},
      {"std::print*", "reprise-logging"},
  };
  return patterns;
}

const Patterns& global_patterns() {
  static const Patterns patterns = {
      {"std::cout", "reprise-logging"},  {"std::cerr", "reprise-logging"},  {"std::clog", "reprise-logging"},
      {"std::wcout", "reprise-logging"}, {"std::wcerr", "reprise-logging"}, {"std::wclog", "reprise-logging"},
      {"stdout", "reprise-logging"},     {"stderr", "reprise-logging"},     {"std::cin", "reprise-io"},
      {"std::wcin", "reprise-io"},       {"stdin", "reprise-io"},           {"environ", "reprise-io"},
  };
  return patterns;
}

std::optional<std::string_view> first_match(const Patterns& patterns, const std::string& name) {
  for (const auto& [pattern, rule_id] : patterns) {
    if (glob_match(std::string(pattern), name)) return rule_id.empty() ? std::nullopt : std::optional(rule_id);
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string_view> rule_for_callee(const std::string& qualified_name) {
  return first_match(callee_patterns(), qualified_name);
}

std::optional<std::string_view> rule_for_system_global(const std::string& qualified_name) {
  return first_match(global_patterns(), qualified_name);
}

}  // namespace reprise::lint
