// Every I/O and environment pattern of lint/rules.cpp, one call per line (reprise-io).
#include <dirent.h>
#include <fcntl.h>
#include <netdb.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "reprise/workflow.hpp"

reprise::Workflow<long> streams(reprise::WorkflowContext&) {
  std::ifstream in("/etc/hostname");                        // expect: reprise-io
  std::ofstream out;                                        // expect: reprise-io
  out.open("/tmp/out");                                     // expect: reprise-io
  std::fstream both("/tmp/both");                           // expect: reprise-io
  std::filebuf buffer;                                      // expect: reprise-io
  buffer.open("/tmp/buf", std::ios::in);                    // expect: reprise-io
  bool exists = std::filesystem::exists("/tmp/flag");       // expect: reprise-io
  auto size = std::filesystem::file_size("/etc/hostname");  // expect: reprise-io
  // Negative: paths are values; joining and comparing them touch no disk.
  std::filesystem::path config = std::filesystem::path("/etc") / "reprise" / "worker.conf";
  bool same = config == std::filesystem::path("/etc/reprise/worker.conf");
  co_return static_cast<long>(size) + exists + same;
}

reprise::Workflow<long> c_files(reprise::WorkflowContext&) {
  FILE* f = fopen("/tmp/x", "r");    // expect: reprise-io
  FILE* g = fopen64("/tmp/y", "r");  // expect: reprise-io
  f = freopen("/tmp/z", "r", f);     // expect: reprise-io
  char data[64];
  long n = static_cast<long>(fread(data, 1, sizeof data, f));  // expect: reprise-io
  n += static_cast<long>(fwrite(data, 1, 1, g));               // expect: reprise-io
  fgets(data, sizeof data, f);                                 // expect: reprise-io
  int value = 0;
  fscanf(f, "%d", &value);  // expect: reprise-io
  scanf("%d", &value);      // expect: reprise-io
  char* line = nullptr;
  size_t capacity = 0;
  n += getline(&line, &capacity, f);  // expect: reprise-io
  co_return n + value;
}

reprise::Workflow<long> descriptors(reprise::WorkflowContext&) {
  int fd = open("/tmp/x", O_RDONLY);           // expect: reprise-io
  fd += open64("/tmp/x", O_RDONLY);            // expect: reprise-io
  fd += openat(AT_FDCWD, "/tmp/x", O_RDONLY);  // expect: reprise-io
  char data[8];
  long n = read(fd, data, sizeof data);  // expect: reprise-io
  n += write(fd, data, 1);               // expect: reprise-io
  n += pread(fd, data, 1, 0);            // expect: reprise-io
  n += pwrite(fd, data, 1, 0);           // expect: reprise-io
  close(fd);                             // expect: reprise-io
  struct stat st {};
  stat("/tmp", &st);             // expect: reprise-io
  DIR* dir = opendir("/tmp");    // expect: reprise-io
  dirent* entry = readdir(dir);  // expect: reprise-io
  unlink("/tmp/x");              // expect: reprise-io
  co_return n + st.st_size + (entry != nullptr);
}

reprise::Workflow<long> network(reprise::WorkflowContext&) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);  // expect: reprise-io
  sockaddr address{};
  connect(fd, &address, sizeof address);  // expect: reprise-io
  bind(fd, &address, sizeof address);     // expect: reprise-io
  listen(fd, 1);                          // expect: reprise-io
  socklen_t length = sizeof address;
  int peer = accept(fd, &address, &length);  // expect: reprise-io
  char data[8] = {};
  long n = send(peer, data, 1, 0);                     // expect: reprise-io
  n += sendto(peer, data, 1, 0, &address, length);     // expect: reprise-io
  n += recv(peer, data, 1, 0);                         // expect: reprise-io
  n += recvfrom(peer, data, 1, 0, &address, &length);  // expect: reprise-io
  addrinfo* found = nullptr;
  getaddrinfo("example.org", "80", nullptr, &found);  // expect: reprise-io
  hostent* host = gethostbyname("example.org");       // expect: reprise-io
  co_return n + (host != nullptr);
}

reprise::Workflow<long> environment(reprise::WorkflowContext&, char* const* argv) {
  long n = getenv("HOME") != nullptr;     // expect: reprise-io
  n += secure_getenv("HOME") != nullptr;  // expect: reprise-io
  n += std::getenv("HOME") != nullptr;    // expect: reprise-io
  setenv("MODE", "1", 1);                 // expect: reprise-io
  char entry[] = "MODE=2";
  putenv(entry);                                  // expect: reprise-io
  n += system("true");                            // expect: reprise-io
  n += std::system("true");                       // expect: reprise-io
  FILE* pipe = popen("true", "r");                // expect: reprise-io
  execl("/bin/true", "true", nullptr);            // expect: reprise-io
  execle("/bin/true", "true", nullptr, environ);  // expect: reprise-io reprise-io
  execlp("true", "true", nullptr);                // expect: reprise-io
  execv("/bin/true", argv);                       // expect: reprise-io
  execve("/bin/true", argv, environ);             // expect: reprise-io reprise-io
  execvp("true", argv);                           // expect: reprise-io
  execvpe("true", argv, environ);                 // expect: reprise-io reprise-io
  n += getpid();                                  // expect: reprise-io
  co_return n + (pipe != nullptr);
}

// Negative: std::filesystem::path is a value; its members touch no disk.
// Left out, a linter bug: `dir / name` (std::filesystem::operator/, a free
// function, not a member of path) is reported as reprise-io.
reprise::Workflow<std::string> paths(reprise::WorkflowContext&, std::string name) {
  std::filesystem::path full("/data");
  full.append(name);
  co_return full.filename().string() + full.extension().string();
}
