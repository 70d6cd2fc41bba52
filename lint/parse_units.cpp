#include "lint/parse_units.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <system_error>

#include "lint/collector.hpp"
#include "lint/facts_io.hpp"

namespace reprise::lint {

namespace {

bool parse_one(const clang::tooling::CompilationDatabase& db, const std::string& file,
               const clang::tooling::ArgumentsAdjuster& adjuster, UnitFacts& out) {
  clang::tooling::ClangTool tool(db, {file});
  tool.appendArgumentsAdjuster(adjuster);
  return tool.run(make_collector(out).get()) == 0;
}

// One job's output, per unit: "INDEX PARSED LENGTH\n" then LENGTH bytes of
// serialized facts.
void run_job(const clang::tooling::CompilationDatabase& db, const std::vector<std::string>& files,
             const clang::tooling::ArgumentsAdjuster& adjuster, size_t first, size_t stride, int fd) {
  FILE* out = fdopen(fd, "w");
  if (out == nullptr) _exit(3);
  for (size_t i = first; i < files.size(); i += stride) {
    UnitFacts facts;
    bool parsed = parse_one(db, files[i], adjuster, facts);
    std::string text = serialize(facts);
    std::fprintf(out, "%zu %d %zu\n", i, parsed ? 1 : 0, text.size());
    std::fwrite(text.data(), 1, text.size(), out);
  }
  std::fflush(stderr);
  _exit(std::fclose(out) == 0 ? 0 : 3);
}

enum class Outcome { kNotReported, kParsed, kFailed };

// Reads what a job wrote into the units it reports.
void read_job(const std::string& path, std::vector<UnitFacts>& units, std::vector<Outcome>& outcomes) {
  std::ifstream in(path, std::ios::binary);
  size_t index = 0, length = 0;
  int parsed = 0;
  while (in >> index >> parsed >> length && in.get() == '\n' && index < units.size()) {
    std::string text(length, '\0');
    if (!in.read(text.data(), static_cast<std::streamsize>(length))) break;
    units[index] = deserialize(text);
    outcomes[index] = parsed != 0 ? Outcome::kParsed : Outcome::kFailed;
  }
}

}  // namespace

ParsedUnits parse_units(const clang::tooling::CompilationDatabase& db, const std::vector<std::string>& files,
                        const clang::tooling::ArgumentsAdjuster& adjuster, unsigned jobs) {
  ParsedUnits result;
  result.units.resize(files.size());
  size_t children = std::min<size_t>(jobs, files.size());
  if (children <= 1) {
    for (size_t i = 0; i < files.size(); ++i) {
      if (!parse_one(db, files[i], adjuster, result.units[i])) result.failed.push_back(files[i]);
    }
    return result;
  }

  struct Job {
    pid_t pid;
    std::string path;
  };
  std::vector<Job> started;
  std::string pattern = (std::filesystem::temp_directory_path() / "reprise-lint-XXXXXX").string();
  for (size_t j = 0; j < children; ++j) {
    std::string path = pattern;
    int fd = mkstemp(path.data());
    if (fd < 0) throw std::system_error(errno, std::generic_category(), "reprise-lint: cannot create " + pattern);
    std::cout.flush();
    std::cerr.flush();
    pid_t pid = fork();
    if (pid < 0) throw std::system_error(errno, std::generic_category(), "reprise-lint: fork");
    if (pid == 0) run_job(db, files, adjuster, j, children, fd);
    close(fd);
    started.push_back({pid, path});
  }
  std::vector<Outcome> outcomes(files.size(), Outcome::kNotReported);
  for (const auto& job : started) {
    int status = 0;
    waitpid(job.pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      std::cerr << "reprise-lint: a parse job ended abnormally (wait status " << status << ")\n";
    }
    read_job(job.path, result.units, outcomes);
    std::filesystem::remove(job.path);
  }
  // A unit its job did not report (the job died) failed too.
  for (size_t i = 0; i < files.size(); ++i) {
    if (outcomes[i] != Outcome::kParsed) result.failed.push_back(files[i]);
  }
  return result;
}

}  // namespace reprise::lint
