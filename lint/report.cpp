#include "lint/report.hpp"

#include <cstdint>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

#include "lint/paths.hpp"
#include "tools/command_line/command_line.hpp"

namespace reprise::lint {

namespace {

using nlohmann::json;

std::string where_text(const Location& where) {
  return display_path(where.file) + ":" + std::to_string(where.line) + ":" + std::to_string(where.column);
}

std::string plural(size_t n, const char* word) { return std::to_string(n) + " " + word + (n == 1 ? "" : "s"); }

void write_text(std::ostream& out, const std::vector<Finding>& findings, const Summary& summary) {
  size_t errors = 0;
  for (const auto& f : findings) {
    errors += f.rule->severity == Severity::kError;
    out << where_text(f.where) << ": " << severity_name(f.rule->severity) << ": " << f.message() << " [" << f.rule->id
        << "]\n";
    for (const auto& step : f.chain)
      out << "  " << step.function << " " << step.does << " (" << where_text(step.where) << ")\n";
    out << "  hint: " << f.rule->hint << "\n";
  }
  out << "reprise-lint: " << plural(errors, "error") << ", " << plural(findings.size() - errors, "warning") << " in "
      << plural(summary.workflows, "workflow") << " (" << plural(summary.files, "file") << ")\n";
}

json location_json(const Location& where) {
  return {{"file", display_path(where.file)}, {"line", where.line}, {"column", where.column}};
}

void write_json(std::ostream& out, const std::vector<Finding>& findings, const Summary& summary) {
  json list = json::array();
  for (const auto& f : findings) {
    json chain = json::array();
    for (const auto& step : f.chain) {
      chain.push_back({{"function", step.function}, {"does", step.does}, {"location", location_json(step.where)}});
    }
    list.push_back({{"rule", f.rule->id},
                    {"severity", severity_name(f.rule->severity)},
                    {"workflow", f.workflow},
                    {"message", f.message()},
                    {"location", location_json(f.where)},
                    {"chain", chain},
                    {"hint", f.rule->hint}});
  }
  out << json{{"files", summary.files}, {"workflows", summary.workflows}, {"findings", list}}.dump(2) << "\n";
}

json sarif_location(const Location& where) {
  return {{"physicalLocation",
           {{"artifactLocation", {{"uri", display_path(where.file)}}},
            {"region", {{"startLine", where.line}, {"startColumn", where.column}}}}}};
}

// 64-bit FNV-1a: a hash that is the same on every build and platform (unlike
// std::hash), which is all a fingerprint needs; too small to be worth a library.
std::string fnv1a_hex(const std::string& text) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 0x100000001b3ULL;
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash));
  return hex;
}

// What identifies a finding across commits: its rule, file, workflow and the
// chain's functions and steps, without line or column numbers, so an edit
// that moves the code keeps the fingerprint. The n-th finding with the same
// identity in a file (in report order) gets ":n" after the hash, as
// code scanning's own line hashes do.
std::vector<std::string> fingerprints(const std::vector<Finding>& findings) {
  std::vector<std::string> out;
  std::map<std::string, int> seen;
  for (const auto& f : findings) {
    std::string identity = std::string(f.rule->id) + "\n" + display_path(f.where.file) + "\n" + f.workflow;
    for (const auto& step : f.chain) identity += "\n" + step.function + " " + step.does;
    std::string hash = fnv1a_hex(identity);
    out.push_back(hash + ":" + std::to_string(++seen[hash]));
  }
  return out;
}

void write_sarif(std::ostream& out, const std::vector<Finding>& findings, const std::string& docs_uri) {
  json rules = json::array();
  for (const auto& r : all_rules()) {
    rules.push_back({{"id", r.id},
                     {"shortDescription", {{"text", "workflow " + std::string(r.problem)}}},
                     {"fullDescription", {{"text", r.why}}},
                     {"help", {{"text", r.hint}}},
                     {"helpUri", docs_uri + "#" + std::string(r.id)},
                     {"defaultConfiguration", {{"level", severity_name(r.severity)}}}});
  }
  const std::vector<std::string> fingerprint = fingerprints(findings);
  json results = json::array();
  for (size_t i = 0; i < findings.size(); ++i) {
    const Finding& f = findings[i];
    const size_t index = static_cast<size_t>(f.rule - all_rules().data());  // rule() points into all_rules()
    json flow = json::array();
    for (const auto& step : f.chain) {
      json location = sarif_location(step.where);
      location["message"] = {{"text", step.function + " " + step.does}};
      flow.push_back({{"location", location}});
    }
    results.push_back(
        {{"ruleId", f.rule->id},
         {"ruleIndex", index},
         {"level", severity_name(f.rule->severity)},
         {"message", {{"text", f.message() + ": " + f.chain.back().does + ". " + std::string(f.rule->hint)}}},
         {"locations", json::array({sarif_location(f.where)})},
         {"partialFingerprints", {{"reprise-lint/v1", fingerprint[i]}}},
         {"codeFlows", json::array({{{"threadFlows", json::array({{{"locations", flow}}})}}})}});
  }
  json log = {
      {"$schema", "https://json.schemastore.org/sarif-2.1.0.json"},
      {"version", "2.1.0"},
      {"runs",
       json::array({{{"tool",
                      {{"driver",
                        {{"name", "reprise-lint"}, {"version", reprise::command_line::version()}, {"rules", rules}}}}},
                     {"results", results}}})}};
  out << log.dump(2) << "\n";
}

}  // namespace

void write_report(std::ostream& out, Format format, const std::vector<Finding>& findings, const Summary& summary,
                  const std::string& docs_uri) {
  switch (format) {
    case Format::kText:
      write_text(out, findings, summary);
      break;
    case Format::kJson:
      write_json(out, findings, summary);
      break;
    case Format::kSarif:
      write_sarif(out, findings, docs_uri);
      break;
  }
}

}  // namespace reprise::lint
