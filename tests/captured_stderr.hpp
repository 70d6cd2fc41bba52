// What a piece of test code wrote to stderr (where the engine and the SDK
// log), read back through a temporary file.
//
// Thread rule: the capture swaps the process's stderr, so nothing else may
// log while `run` runs.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>

namespace reprise::testing {

inline std::string captured_stderr_of(const std::function<void()>& run) {
  std::fflush(stderr);
  char path[] = "/tmp/reprise-stderr-XXXXXX";
  const int fd = mkstemp(path);
  const int saved = dup(STDERR_FILENO);
  dup2(fd, STDERR_FILENO);
  run();
  std::fflush(stderr);
  dup2(saved, STDERR_FILENO);
  close(saved);
  std::string out;
  char buf[4096];
  lseek(fd, 0, SEEK_SET);
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  close(fd);
  unlink(path);
  return out;
}

}  // namespace reprise::testing
