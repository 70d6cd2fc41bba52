// Runs a child process with its stdout on a pipe, for tests that read what a
// real writer acknowledged and then kill it; and reads the address a server
// child prints.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace reprise::engine::testing {

// The "127.0.0.1:PORT" after `label` in a server's first line, or "". Not
// std::regex: g++ 12 -O2 under ASan reports its automaton as maybe
// uninitialized, which fails ./run test-asan with CI=true (-Werror).
inline std::string loopback_address_after(const std::string& line, const std::string& label) {
  const std::string prefix = label + " 127.0.0.1:";
  const size_t at = line.find(prefix);
  if (at == std::string::npos) return "";
  size_t end = at + prefix.size();
  while (end < line.size() && std::isdigit(static_cast<unsigned char>(line[end]))) ++end;
  if (end == at + prefix.size()) return "";
  const size_t address_at = at + label.size() + 1;
  return line.substr(address_at, end - address_at);
}

class ChildProcess {
 public:
  // With `stderr_log`, the child's stderr is appended to that file.
  explicit ChildProcess(const std::vector<std::string>& args, const std::string& stderr_log = "") {
    int fds[2];
    if (::pipe(fds) != 0) return;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&actions, fds[0]);
    if (!stderr_log.empty()) {
      posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, stderr_log.c_str(), O_WRONLY | O_CREAT | O_APPEND,
                                       0644);
    }
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    std::vector<std::string> env_storage = child_environment(args.front());
    std::vector<char*> envp;
    for (auto& e : env_storage) envp.push_back(e.data());
    envp.push_back(nullptr);
    if (posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), envp.data()) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
    ::close(fds[1]);
    out_ = ::fdopen(fds[0], "r");
  }
  ~ChildProcess() {
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      wait();
    }
    if (out_ != nullptr) std::fclose(out_);
  }
  // This process's environment, except that a reprise-server child gets
  // REPRISE_SERVER_TSAN_OPTIONS as its TSAN_OPTIONS when that is set:
  // ./run test-tsan gives the server, whose handlers run on uninstrumented
  // gRPC's threads, its own suppressions (tests/tsan_server.supp).
  static std::vector<std::string> child_environment(const std::string& program) {
    const char* server_tsan = std::getenv("REPRISE_SERVER_TSAN_OPTIONS");
    const bool is_server = program.size() >= 14 && program.compare(program.size() - 14, 14, "reprise-server") == 0;
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) {
      if (server_tsan != nullptr && is_server && std::string(*e).rfind("TSAN_OPTIONS=", 0) == 0) continue;
      env.emplace_back(*e);
    }
    if (server_tsan != nullptr && is_server) env.push_back(std::string("TSAN_OPTIONS=") + server_tsan);
    return env;
  }

  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  bool started() const { return pid_ > 0 && out_ != nullptr; }
  pid_t pid() const { return pid_; }

  // One line of the child's stdout without its newline; false at the end.
  bool read_line(std::string& line) {
    line.clear();
    int c;
    while (out_ != nullptr && (c = std::fgetc(out_)) != EOF) {
      if (c == '\n') return true;
      line += static_cast<char>(c);
    }
    return false;  // a line cut by a kill is not a whole line
  }

  void kill(int sig) { ::kill(pid_, sig); }

  // The raw wait status.
  int wait() {
    int status = 0;
    ::waitpid(pid_, &status, 0);
    reaped_ = true;
    return status;
  }

  // Whether it is still running (reaps it if not).
  bool alive() {
    if (pid_ <= 0 || reaped_) return false;
    if (::waitpid(pid_, nullptr, WNOHANG) == 0) return true;
    reaped_ = true;
    return false;
  }

  // SIGTERM, then SIGKILL if it has not exited within `grace`.
  void stop(std::chrono::milliseconds grace) {
    if (pid_ <= 0 || reaped_) return;
    ::kill(pid_, SIGTERM);
    for (auto waited = std::chrono::milliseconds(0); waited < grace; waited += std::chrono::milliseconds(100)) {
      if (!alive()) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ::kill(pid_, SIGKILL);
    wait();
  }

 private:
  pid_t pid_ = -1;
  FILE* out_ = nullptr;
  bool reaped_ = false;
};

}  // namespace reprise::engine::testing
