// A PostgreSQL of the test process's own: initdb into a temporary directory
// and `postgres` on a free loopback port, started at the first use and
// stopped when the process exits; each test asks for a fresh database.
// A test that crashes or fails over its database starts a private one
// (start_private), and a streaming standby of it (start_standby).
// PostgreSQL refuses to run as root, so as root it runs as the `postgres`
// system user the Debian package creates (setpriv). Missing PostgreSQL:
// tests skip, except under CI=true, where they fail (./run installs it).
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "engine/store/postgres/pg_connection.hpp"

extern char** environ;

namespace reprise::engine::testing {

class TestPostgres {
 public:
  // The process's PostgreSQL, started on first use; null (and `why`) when it
  // cannot be.
  static TestPostgres* get(std::string* why = nullptr) {
    static std::once_flag once;
    static std::unique_ptr<TestPostgres> instance;
    static std::string failure;
    std::call_once(once, [] {
      auto pg = std::unique_ptr<TestPostgres>(new TestPostgres());
      failure = pg->start();
      if (failure.empty()) {
        instance = std::move(pg);
        std::atexit([] { instance.reset(); });
      }
    });
    if (why != nullptr) *why = failure;
    return instance.get();
  }

  // A PostgreSQL of the caller's own, with `settings` (name=value) on its
  // command line; stopped when the pointer goes. Null and `why` when it
  // cannot be started.
  static std::unique_ptr<TestPostgres> start_private(const std::vector<std::string>& settings, std::string& why) {
    auto pg = std::unique_ptr<TestPostgres>(new TestPostgres());
    pg->settings_ = settings;
    why = pg->make_directory();
    if (why.empty()) why = pg->init_data();
    if (why.empty()) why = pg->launch();
    return why.empty() ? std::move(pg) : nullptr;
  }

  // A hot standby of this PostgreSQL (pg_basebackup -R: it streams this
  // one's WAL and answers read-only queries), with `settings`; null and `why`
  // when it cannot be started.
  std::unique_ptr<TestPostgres> start_standby(const std::vector<std::string>& settings, std::string& why) {
    auto standby = std::unique_ptr<TestPostgres>(new TestPostgres());
    standby->settings_ = settings;
    why = standby->make_directory();
    if (!why.empty()) return nullptr;
    const std::string log = standby->dir_ + "/log";
    const pid_t copy = spawn({bin_dir() + "/pg_basebackup", "-D", standby->dir_ + "/data", "-h", "127.0.0.1", "-p",
                              std::to_string(port_), "-U", "postgres", "-R", "-X", "stream", "--no-sync"},
                             log);
    int status = 0;
    if (copy < 0 || ::waitpid(copy, &status, 0) != copy || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      why = "pg_basebackup failed (see " + log + ")";
      return nullptr;
    }
    why = standby->launch();
    return why.empty() ? std::move(standby) : nullptr;
  }

  // The machine under it lost: the postmaster and every process it started
  // killed at once (SIGKILL), nothing flushed or said goodbye to.
  void crash() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGSTOP);  // it starts no process while its children are listed
    for (pid_t child : children_of(pid_)) ::kill(child, SIGKILL);
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }

  // Starts it again on its data and port (after crash(): crash recovery);
  // "" or why not.
  std::string start_again() { return launch(); }

  // Promotes a standby to a primary (pg_promote, waiting until it is one);
  // "" or why not.
  std::string promote() {
    auto db = PgConnection::connect(url("postgres"));
    if (!db) return db.status().to_string();
    auto r = (*db)->query("SELECT pg_promote(true, 30)");
    if (!r) return r.status().to_string();
    return r->get_int(0, 0) != 0 ? "" : "pg_promote did not finish within 30 s";
  }

  int port() const { return port_; }

  // Whether a missing PostgreSQL fails the test rather than skipping it.
  static bool required() {
    const char* ci = std::getenv("CI");
    return ci != nullptr && std::string(ci) == "true";
  }

  // A new, empty database's URL.
  std::string new_database() {
    static std::atomic<int> counter{0};
    const std::string name = "t" + std::to_string(::getpid()) + "_" + std::to_string(counter++);
    auto admin = PgConnection::connect(url("postgres"));
    if (!admin) return "";
    if (!(*admin)->exec("CREATE DATABASE " + name).is_ok()) return "";
    return url(name);
  }

  // A new, empty database whose files live in `dir` (an empty directory,
  // e.g. a small file system a test fills, which the postgres user can
  // reach): a tablespace there. Dropped with drop_database_in(). "" and
  // `why` when it cannot be made.
  std::string new_database_in(const std::string& dir, std::string& why) {
    static std::atomic<int> counter{0};
    const std::string name = "s" + std::to_string(::getpid()) + "_" + std::to_string(counter++);
    if (::geteuid() == 0) {
      const passwd* pw = ::getpwnam("postgres");
      if (pw == nullptr || ::chown(dir.c_str(), pw->pw_uid, pw->pw_gid) != 0) {
        why = "cannot hand " + dir + " to postgres";
        return "";
      }
    }
    auto admin = PgConnection::connect(url("postgres"));
    Status made = admin ? (*admin)->exec("CREATE TABLESPACE " + name + " LOCATION '" + dir + "'") : admin.status();
    if (made.is_ok()) made = (*admin)->exec("CREATE DATABASE " + name + " TABLESPACE " + name);
    if (!made.is_ok()) {
      why = made.to_string();
      return "";
    }
    return url(name);
  }
  // Drops a database of new_database_in() and its tablespace; every
  // connection to it must be closed.
  bool drop_database_in(const std::string& database_url) {
    const std::string name = database_url.substr(database_url.rfind('/') + 1);
    auto admin = PgConnection::connect(url("postgres"));
    return admin && (*admin)->exec("DROP DATABASE IF EXISTS " + name).is_ok() &&
           (*admin)->exec("DROP TABLESPACE IF EXISTS " + name).is_ok();
  }

  // The postmaster's process id (its backends are its children).
  pid_t pid() const { return pid_; }

  std::string url(const std::string& database) const {
    return "postgresql://postgres@127.0.0.1:" + std::to_string(port_) + "/" + database;
  }

  ~TestPostgres() {
    if (pid_ > 0) {
      ::kill(pid_, SIGQUIT);  // immediate shutdown: the data goes with the directory
      int status = 0;
      ::waitpid(pid_, &status, 0);
    }
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }

 private:
  TestPostgres() = default;

  static std::string bin_dir() {
    for (const char* dir : {"/usr/lib/postgresql/15/bin", "/usr/lib/postgresql/16/bin", "/usr/lib/postgresql/17/bin"}) {
      if (std::filesystem::exists(std::string(dir) + "/postgres")) return dir;
    }
    return "";
  }

  static int free_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    int port = 0;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      port = ntohs(addr.sin_port);
    }
    ::close(fd);
    return port;
  }

  // Runs `args` as the user PostgreSQL runs as. Started from the main
  // thread, it gets SIGQUIT (PostgreSQL's immediate shutdown) when this
  // process dies, so a test binary killed (-9, a timeout) leaves no
  // PostgreSQL behind; the kernel sends it when the thread that started the
  // child ends, so only the main thread, whose end is the process's, asks.
  pid_t spawn(std::vector<std::string> args, const std::string& log) {
    std::vector<std::string> setpriv;
    if (::geteuid() == 0) setpriv = {"--reuid=postgres", "--regid=postgres", "--init-groups"};
    if (::gettid() == ::getpid()) setpriv.insert(setpriv.end(), {"--pdeathsig", "QUIT"});
    if (!setpriv.empty()) {
      setpriv.insert(setpriv.begin(), "/usr/bin/setpriv");
      setpriv.push_back("--");
      args.insert(args.begin(), setpriv.begin(), setpriv.end());
    }
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    pid_t pid = 0;
    const int rc = ::posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    return rc == 0 ? pid : -1;
  }

  std::string start() {
    std::string why = make_directory();
    if (why.empty()) why = init_data();
    return why.empty() ? launch() : why;
  }

  // The temporary directory its data and log go to, the postgres user's.
  std::string make_directory() {
    if (bin_dir().empty()) return "PostgreSQL is not installed (postgresql-15: ./run installs it)";
    if (::geteuid() == 0 && ::getpwnam("postgres") == nullptr) return "no 'postgres' user to run PostgreSQL as";
    std::string tmpl = (std::filesystem::temp_directory_path() / "reprise-pg-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) return "cannot make a temporary directory";
    dir_ = tmpl;
    if (::geteuid() == 0) {
      const passwd* pw = ::getpwnam("postgres");
      if (::chown(dir_.c_str(), pw->pw_uid, pw->pw_gid) != 0) return "cannot hand " + dir_ + " to postgres";
    }
    return "";
  }

  std::string init_data() {
    const std::string log = dir_ + "/log";
    pid_t init = spawn({bin_dir() + "/initdb", "-D", dir_ + "/data", "-U", "postgres", "--auth=trust", "--no-sync",
                        "--encoding=UTF8", "--locale=C"},
                       log);
    int status = 0;
    if (init < 0 || ::waitpid(init, &status, 0) != init || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      return "initdb failed (see " + log + ")";
    }
    return "";
  }

  // Starts postgres on the data directory (on a free port the first time,
  // the same one after) and waits until it takes connections.
  std::string launch() {
    const std::string log = dir_ + "/log";
    if (port_ == 0) port_ = free_port();
    std::vector<std::string> args{bin_dir() + "/postgres",
                                  "-D",
                                  dir_ + "/data",
                                  "-p",
                                  std::to_string(port_),
                                  "-c",
                                  "listen_addresses=127.0.0.1",
                                  "-c",
                                  "unix_socket_directories=" + dir_,
                                  "-c",
                                  "max_connections=200"};
    for (const std::string& setting : settings_) args.insert(args.end(), {"-c", setting});
    pid_ = spawn(args, log);
    if (pid_ < 0) return "cannot start postgres";
    int status = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline) {
      if (PgConnection::connect(url("postgres")).is_ok()) return "";
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return "postgres exited at start (see " + log + ")";
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return "postgres did not accept connections within 30 s (see " + log + ")";
  }

  // The processes whose parent is `parent`.
  static std::vector<pid_t> children_of(pid_t parent) {
    std::vector<pid_t> children;
    for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
      const std::string name = entry.path().filename().string();
      if (name.find_first_not_of("0123456789") != std::string::npos) continue;
      std::ifstream stat(entry.path() / "stat");
      std::string line;
      if (!std::getline(stat, line)) continue;
      // pid (comm) state ppid ...: comm may hold spaces and parentheses.
      const size_t close = line.rfind(')');
      if (close == std::string::npos) continue;
      std::istringstream rest(line.substr(close + 1));
      std::string state;
      pid_t ppid = 0;
      if (rest >> state >> ppid && ppid == parent) children.push_back(std::stoi(name));
    }
    return children;
  }

  std::string dir_;
  std::vector<std::string> settings_;
  int port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace reprise::engine::testing

// In a test body: the URL of a fresh database, or skip (fail under CI).
#define REPRISE_POSTGRES_DATABASE(url_var)                                        \
  std::string url_var;                                                            \
  {                                                                               \
    std::string why_;                                                             \
    auto* pg_ = ::reprise::engine::testing::TestPostgres::get(&why_);             \
    if (pg_ == nullptr && ::reprise::engine::testing::TestPostgres::required()) { \
      FAIL() << "PostgreSQL is required under CI: " << why_;                      \
    }                                                                             \
    if (pg_ == nullptr) GTEST_SKIP() << "no PostgreSQL: " << why_;                \
    url_var = pg_->new_database();                                                \
    ASSERT_FALSE(url_var.empty()) << "CREATE DATABASE failed";                    \
  }
