// reprise-lint: the static determinism checker for workflow code.
//
//   reprise-lint -p BUILD_DIR [--format=text|json|sarif] [--config FILE]
//                [--strict] [--warnings-as-errors] [--jobs N] [--sarif FILE]
//                [--docs-uri URI] [FILE...]
//
// Reads BUILD_DIR/compile_commands.json (meson writes it), parses every
// translation unit in it (or just FILEs) with clang 19, and checks every
// workflow across all of them. Exit 0: no errors; 1: an error-level finding
// (any finding with --warnings-as-errors);
// 2: the tool could not do its job (bad database, a file that does not parse).
#include <clang/Tooling/ArgumentsAdjusters.h>
#include <clang/Tooling/CompilationDatabase.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "lint/analysis.hpp"
#include "lint/config.hpp"
#include "lint/parse_units.hpp"
#include "lint/report.hpp"
#include "tools/command_line/command_line.hpp"

namespace {

using namespace reprise::lint;

struct Arguments {
  std::string build_dir;
  std::string config_path;
  Format format = Format::kText;
  bool strict = false;
  bool warnings_as_errors = false;
  unsigned jobs = 1;       // parse processes (parse_units.hpp)
  std::string sarif_path;  // also write SARIF here (one run for the log and code scanning)
  std::string docs_uri;    // empty: default_docs_uri()
  std::vector<std::string> files;
};

// Every flag, declared once on `app`, writing into `args`.
void add_flags(CLI::App& app, Arguments& args) {
  app.description("The static determinism checker for Reprise workflow code.");
  app.footer(
      "Exit status: 0 no errors; 1 an error-level finding (any finding with --warnings-as-errors); 2 the tool could "
      "not do its job (a bad command line or compilation database, a file that does not parse).");
  app.add_option("-p", args.build_dir, "The build directory with compile_commands.json (meson writes it)")
      ->required()
      ->type_name("BUILD_DIR");
  app.add_option_function<std::string>(
         "--format",
         [&args](const std::string& name) {
           args.format = name == "json" ? Format::kJson : name == "sarif" ? Format::kSarif : Format::kText;
         },
         "How findings print (default text)")
      ->check(CLI::IsMember({"text", "json", "sarif"}).description(""))
      ->type_name("text|json|sarif");
  app.add_option("--config", args.config_path, "Rules' levels and exceptions (docs/lint.md)")->type_name("FILE");
  app.add_flag("--strict", args.strict, "Also report calls the linter cannot follow");
  app.add_flag("--warnings-as-errors", args.warnings_as_errors, "Exit 1 on any finding");
  app.add_option("--jobs", args.jobs, "Parse in this many processes")
      ->check(reprise::command_line::whole_number(1, 1024))
      ->type_name("N");
  app.add_option("--sarif", args.sarif_path, "Also write the report as SARIF to FILE")->type_name("FILE");
  app.add_option("--docs-uri", args.docs_uri,
                 "Where docs/lint.md is read, for the rules' helpUri in SARIF (default: the copy installed with "
                 "reprise-lint)")
      ->type_name("URI");
  app.add_option("files", args.files, "Only these files (default: every file in the database)")->type_name("FILE");
}

// Flags that make a build's compile command a quiet parse with clang 19's
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

// docs/lint.md as installed beside this binary (PREFIX/bin/reprise-lint,
// PREFIX/share/doc/reprise-lint/lint.md), or the source tree's copy for a
// binary that runs from its build directory.
std::string default_docs_uri() {
  std::error_code ec;
  std::filesystem::path binary = std::filesystem::read_symlink("/proc/self/exe", ec);
  std::filesystem::path installed = binary.parent_path().parent_path() / "share/doc/reprise-lint/lint.md";
  if (!ec && std::filesystem::exists(installed, ec)) return "file://" + installed.string();
  return "file://" REPRISE_LINT_SOURCE_DOCS;
}

}  // namespace

int main(int argc, char** argv) {
  Arguments args;
  CLI::App app("", "reprise-lint");
  reprise::command_line::set_up(app);
  add_flags(app, args);
  if (std::optional<int> exit_code = reprise::command_line::parse(app, argc, argv)) return *exit_code;
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
  const std::string docs_uri = args.docs_uri.empty() ? default_docs_uri() : args.docs_uri;
  write_report(std::cout, args.format, findings, summary, docs_uri);
  if (!args.sarif_path.empty()) {
    std::ofstream sarif(args.sarif_path);
    write_report(sarif, Format::kSarif, findings, summary, docs_uri);
    if (!sarif.flush()) {
      std::cerr << "reprise-lint: cannot write " << args.sarif_path << "\n";
      return 2;
    }
  }
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
