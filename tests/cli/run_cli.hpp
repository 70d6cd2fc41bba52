// Runs the `reprise` command line (REPRISE_CLI) and the other binaries as a
// user would, from a shell, for the CLI tests.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace reprise {

struct Output {
  int status = -1;
  std::string out;
};

// Runs `command` in a shell, stdout captured, stderr merged into it.
inline Output run_command(const std::string& command) {
  Output o;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, pipe)) > 0;) o.out.append(buf, n);
  const int status = pclose(pipe);
  o.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return o;
}

// The binary an environment variable names (set by tests/meson.build), or
// `fallback` from PATH.
inline std::string binary(const char* variable, const char* fallback) {
  const char* path = std::getenv(variable);
  return path != nullptr ? path : fallback;
}

// Runs the CLI against the server at `address` with `args`.
inline Output cli(const std::string& address, const std::string& args) {
  return run_command(binary("REPRISE_CLI", "reprise") + " --address " + address + " " + args);
}

}  // namespace reprise
