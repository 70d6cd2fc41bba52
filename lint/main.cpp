// reprise-lint: the static determinism checker for workflow code.
//
//   reprise-lint -p BUILD_DIR [--format=text|json|sarif] [--config FILE]
//                [--strict] [--warnings-as-errors] [--jobs N] [FILE...]
//
// Reads BUILD_DIR/compile_commands.json (meson writes it), parses every
// translation unit in it (or just FILEs) with clang 14, and checks every
// workflow across all of them. Exit 0: no errors; 1: an error-level finding
// (any finding with --warnings-as-errors);
// 2: the tool could not do its job (bad database, a file that does not parse).
#include <clang/Tooling/ArgumentsAdjusters.h>
#include <clang/Tooling/CompilationDatabase.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <string>
#include <system_error>
#include <vector>

#include "lint/analysis.hpp"
#include "lint/config.hpp"
#include "lint/parse_units.hpp"
#include "lint/report.hpp"

namespace {

using namespace reprise::lint;

constexpr const char* kUsage =
    "usage: reprise-lint -p BUILD_DIR [--format=text|json|sarif] [--config FILE] [--strict]\n"
    "                    [--warnings-as-errors] [--jobs N] [FILE...]\n";

struct Arguments {
  std::string build_dir;
  std::string config_path;
  Format format = Format::kText;
  bool strict = false;
  bool warnings_as_errors = false;
  unsigned jobs = 1;  // parse processes (parse_units.hpp)
  std::vector<std::string> files;
};

[[noreturn]] void usage_error(const std::string& problem) {
  std::cerr << "reprise-lint: " << problem << "\n" << kUsage;
  std::exit(2);
}

Arguments parse_arguments(int argc, char** argv) {
  Arguments args;
  auto value = [&](int& i, const std::string& flag) -> std::string {
    std::string arg = argv[i];
    if (arg.size() > flag.size() && arg[flag.size()] == '=') return arg.substr(flag.size() + 1);
    if (i + 1 >= argc) usage_error(flag + " needs a value");
    return argv[++i];
  };
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto is = [&](const std::string& flag) { return arg == flag || arg.rfind(flag + "=", 0) == 0; };
    if (arg == "-h" || arg == "--help") {
      std::cout << kUsage;
      std::exit(0);
    } else if (is("-p")) {
      args.build_dir = value(i, "-p");
    } else if (is("--config")) {
      args.config_path = value(i, "--config");
    } else if (is("--format")) {
      std::string format = value(i, "--format");
      if (format == "text") {
        args.format = Format::kText;
      } else if (format == "json") {
        args.format = Format::kJson;
      } else if (format == "sarif") {
        args.format = Format::kSarif;
      } else {
        usage_error("unknown format '" + format + "' (expected text, json or sarif)");
      }
    } else if (is("--jobs")) {
      std::string jobs = value(i, "--jobs");
      try {
        args.jobs = static_cast<unsigned>(std::stoul(jobs));
      } catch (const std::exception&) {
        usage_error("--jobs needs a number, not '" + jobs + "'");
      }
      if (args.jobs == 0) usage_error("--jobs must be at least 1");
    } else if (arg == "--strict") {
      args.strict = true;
    } else if (arg == "--warnings-as-errors") {
      args.warnings_as_errors = true;
    } else if (!arg.empty() && arg[0] == '-') {
      usage_error("unknown option '" + arg + "'");
    } else {
      args.files.push_back(arg);
    }
  }
  if (args.build_dir.empty()) usage_error("-p BUILD_DIR is required (the directory with compile_commands.json)");
  return args;
}

// Flags that make a build's compile command a quiet parse with clang 14's
// own headers, whatever compiler the build used.
clang::tooling::ArgumentsAdjuster lint_adjuster() {
  return [](const clang::tooling::CommandLineArguments& args, llvm::StringRef) {
    clang::tooling::CommandLineArguments adjusted;
    for (const auto& arg : args) {
      if (arg.rfind("-Werror", 0) == 0 || arg.rfind("-fdiagnostics-color", 0) == 0) continue;
      adjusted.push_back(arg);
    }
    adjusted.insert(adjusted.begin() + 1, {"-resource-dir=" REPRISE_LINT_RESOURCE_DIR, "-w"});
    return adjusted;
  };
}

}  // namespace

int main(int argc, char** argv) {
  Arguments args = parse_arguments(argc, argv);
  Config config;
  if (!args.config_path.empty()) {
    try {
      config = load_config(args.config_path);
    } catch (const std::exception& e) {
      std::cerr << "reprise-lint: " << e.what() << "\n";
      return 2;
    }
  }
  std::string error;
  auto db = clang::tooling::CompilationDatabase::loadFromDirectory(args.build_dir, error);
  if (db == nullptr) {
    std::cerr << "reprise-lint: cannot read a compilation database in '" << args.build_dir << "': " << error << "\n";
    return 2;
  }
  std::vector<std::string> files;
  if (args.files.empty()) {
    files = db->getAllFiles();
  } else {
    // The database guesses commands for files it lacks; a file named here
    // must really be in it.
    auto known = db->getAllFiles();
    for (const auto& file : args.files) {
      std::string absolute = std::filesystem::absolute(file).lexically_normal().string();
      if (std::find(known.begin(), known.end(), absolute) == known.end()) {
        std::cerr << "reprise-lint: " << file << " is not in " << args.build_dir << "/compile_commands.json\n";
        return 2;
      }
      files.push_back(absolute);
    }
  }
  std::erase_if(files, [&](const std::string& f) { return config.excluded(f); });
  // The whole program is every unit of the database: what the build compiles.
  bool whole_program = files.size() == db->getAllFiles().size();
  if (files.empty()) {
    std::cerr << "reprise-lint: no files to lint\n";
    return 2;
  }

  ParsedUnits parsed;
  try {
    parsed = parse_units(*db, files, lint_adjuster(), args.jobs);
  } catch (const std::system_error& e) {
    std::cerr << e.what() << "\n";
    return 2;
  }
  Program program;
  for (auto& unit : parsed.units) program.merge(std::move(unit));
  const auto& failed = parsed.failed;
  auto findings = analyze(program, config, AnalysisOptions{args.strict, whole_program});

  Summary summary{files.size(), 0};
  for (const auto& [key, fn] : program.functions) summary.workflows += program.is_root(fn);
  write_report(std::cout, args.format, findings, summary);
  std::cout.flush();  // before anything at exit (a sanitizer's report) can end the process
  if (!failed.empty()) {
    for (const auto& f : failed) std::cerr << "reprise-lint: could not parse " << f << "\n";
    return 2;
  }
  bool errors = std::any_of(findings.begin(), findings.end(), [&](const Finding& f) {
    return f.rule->severity == Severity::kError || args.warnings_as_errors;
  });
  return errors ? 1 : 0;
}
