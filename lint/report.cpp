#include "lint/report.hpp"

#include <nlohmann/json.hpp>

#include "lint/paths.hpp"

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

void write_sarif(std::ostream& out, const std::vector<Finding>& findings) {
  json rules = json::array();
  for (const auto& r : all_rules()) {
    rules.push_back({{"id", r.id},
                     {"shortDescription", {{"text", "workflow " + std::string(r.problem)}}},
                     {"help", {{"text", r.hint}}},
                     {"defaultConfiguration", {{"level", severity_name(r.severity)}}}});
  }
  json results = json::array();
  for (const auto& f : findings) {
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
         {"codeFlows", json::array({{{"threadFlows", json::array({{{"locations", flow}}})}}})}});
  }
  json log = {
      {"$schema", "https://json.schemastore.org/sarif-2.1.0.json"},
      {"version", "2.1.0"},
      {"runs", json::array({{{"tool", {{"driver", {{"name", "reprise-lint"}, {"version", "0.1.0"}, {"rules", rules}}}}},
                             {"results", results}}})}};
  out << log.dump(2) << "\n";
}

}  // namespace

void write_report(std::ostream& out, Format format, const std::vector<Finding>& findings, const Summary& summary) {
  switch (format) {
    case Format::kText:
      write_text(out, findings, summary);
      break;
    case Format::kJson:
      write_json(out, findings, summary);
      break;
    case Format::kSarif:
      write_sarif(out, findings);
      break;
  }
}

}  // namespace reprise::lint
