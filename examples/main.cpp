// reprise-examples: the examples as a worker process or as a client.
//
//   reprise-examples --address HOST:PORT worker [--cache-size N]   serve until SIGTERM
//   reprise-examples --address HOST:PORT run                      run every example, check outcomes
//
// Exit status of `run`: 0 when every example ended as it should.
#include <csignal>
#include <cstring>
#include <thread>

#include "examples/examples.hpp"

namespace {

volatile std::sig_atomic_t stop_requested = 0;
void on_signal(int) { stop_requested = 1; }

int usage() {
  std::fprintf(stderr,
               "usage: reprise-examples --address HOST:PORT worker [--cache-size N] [--task-queue Q]\n"
               "       reprise-examples --address HOST:PORT run [--task-queue Q] [--prefix P]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string address = "127.0.0.1:7233", mode, queue = "examples", prefix = "example-";
  int cache_size = 1000;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (arg == "--address") {
      address = value();
    } else if (arg == "--cache-size") {
      cache_size = std::atoi(value().c_str());
    } else if (arg == "--task-queue") {
      queue = value();
    } else if (arg == "--prefix") {
      prefix = value();
    } else if (arg == "worker" || arg == "run") {
      mode = arg;
    } else {
      return usage();
    }
  }
  setvbuf(stdout, nullptr, _IOLBF, 0);
  auto connection = reprise::Connection::remote(address);
  if (mode == "worker") {
    std::signal(SIGTERM, on_signal);
    std::signal(SIGINT, on_signal);
    reprise::Worker worker(connection, {.task_queue = queue, .cache_size = cache_size});
    examples::register_all(worker);
    worker.start();
    std::printf("worker ready on %s, queue %s\n", address.c_str(), queue.c_str());
    while (!stop_requested) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    worker.stop();
    return 0;
  }
  if (mode == "run") {
    reprise::Client client(connection);
    return examples::run_all(client, queue, prefix, stdout) ? 0 : 1;
  }
  return usage();
}
