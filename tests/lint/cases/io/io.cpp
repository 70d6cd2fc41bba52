// reprise-io: files, sockets, environment and processes belong in activities.
#include <sys/socket.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "reprise/activity.hpp"
#include "reprise/workflow.hpp"

reprise::Workflow<std::string> reads_world(reprise::WorkflowContext&) {
  std::ifstream in("/etc/hostname");  // expect: reprise-io
  std::string host;
  in >> host;
  FILE* f = std::fopen("/tmp/x", "r");                 // expect: reprise-io
  bool exists = std::filesystem::exists("/tmp/flag");  // expect: reprise-io
  const char* home = std::getenv("HOME");              // expect: reprise-io
  std::system("true");                                 // expect: reprise-io
  int fd = socket(AF_INET, SOCK_STREAM, 0);            // expect: reprise-io
  co_return host + (f != nullptr ? "f" : "") + (exists ? "e" : "") + home + std::to_string(fd);
}

// Negative: formatting in memory is deterministic.
reprise::Workflow<std::string> formats(reprise::WorkflowContext&, int n) {
  std::ostringstream out;
  out << "order-" << n;
  co_return out.str();
}

// Negative: the same I/O inside an activity.
std::string hostname(reprise::ActivityContext&) {
  std::ifstream in("/etc/hostname");
  std::string host;
  in >> host;
  return host;
}
