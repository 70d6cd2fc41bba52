#include "lint/analysis.hpp"

#include <algorithm>
#include <deque>
#include <map>
#include <set>
#include <tuple>

#include "lint/evaluation_order.hpp"

namespace reprise::lint {

std::string Finding::message() const { return "workflow '" + workflow + "' " + std::string(rule->problem); }

namespace {

// How the search reached a function: from which function, through which
// call (a virtual call reaches the overrides of its callee).
struct Arrival {
  const FunctionFacts* from = nullptr;
  const Call* call = nullptr;
  bool as_override = false;
};

// Class-hierarchy analysis over the merged program: the overrides of a
// virtual function, direct and indirect, as every unit's class definitions
// declare them.
class Overrides {
 public:
  explicit Overrides(const Program& program) {
    for (const auto& [key, method] : program.virtual_methods) {
      for (const auto& overridden : method.overrides) direct_[overridden].push_back(key);
    }
  }

  const std::vector<std::string>& of(const std::string& key) {
    auto [it, fresh] = all_.try_emplace(key);
    if (!fresh) return it->second;
    std::set<std::string> seen;
    std::vector<std::string> pending{key};
    while (!pending.empty()) {
      std::string at = std::move(pending.back());
      pending.pop_back();
      auto next = direct_.find(at);
      if (next == direct_.end()) continue;
      for (const auto& overrider : next->second) {
        if (seen.insert(overrider).second) pending.push_back(overrider);
      }
    }
    it->second.assign(seen.begin(), seen.end());
    return it->second;
  }

 private:
  std::map<std::string, std::vector<std::string>> direct_;
  std::map<std::string, std::vector<std::string>> all_;
};

// Functions in files the config excludes: decided once per file, not per call.
using Excluded = std::set<const FunctionFacts*>;

// Hazards only the whole program shows, by function key (evaluation order).
using DerivedHazards = std::map<std::string, std::vector<Hazard>>;

class RootSearch {
 public:
  RootSearch(const Program& program, const Config& config, const AnalysisOptions& options, const Excluded& excluded,
             Overrides& overrides, const DerivedHazards& derived, const FunctionFacts& root, const std::string& rule_id,
             std::vector<Finding>& out)
      : program_(program),
        config_(config),
        options_(options),
        excluded_(excluded),
        overrides_(overrides),
        derived_(derived),
        root_(root),
        rule_id_(rule_id),
        out_(out) {}

  // Breadth first, so each chain reported is a shortest one. A call silenced
  // for this rule is not followed; a function silenced for it is not entered.
  void run() {
    std::deque<const FunctionFacts*> queue{&root_};
    arrivals_[&root_] = {};
    while (!queue.empty()) {
      const FunctionFacts* fn = queue.front();
      queue.pop_front();
      if (silences(fn->suppressed, rule_id_)) continue;
      auto derived = derived_.find(fn->key);
      for (const auto* hazards : {&fn->hazards, derived == derived_.end() ? nullptr : &derived->second}) {
        if (hazards == nullptr) continue;
        for (const auto& hazard : *hazards) {
          if (hazard.rule != rule_id_ || silences(hazard.suppressed, rule_id_)) continue;
          if (!hazard.callee.empty() && config_.allowed(hazard.callee)) continue;
          report(*fn, hazard.what, hazard.where);
        }
      }
      // The user's own calls first: of two chains as short, the one
      // without a library in the middle reads better.
      for (bool through_library : {false, true}) {
        for (const auto& call : fn->calls) {
          if (call.through.empty() == through_library) continue;
          follow(*fn, call, queue);
        }
      }
    }
  }

 private:
  void follow(const FunctionFacts& fn, const Call& call, std::deque<const FunctionFacts*>& queue) {
    if (silences(call.suppressed, rule_id_) || config_.allowed(call.callee_name)) return;
    if (auto denied = config_.denied_rule(call.callee_name)) {
      if (*denied == rule_id_) report(fn, "calls " + call.callee_name, call.where);
      return;
    }
    if (call.virtual_dispatch) follow_overrides(fn, call, queue);
    if (call.followed) enter(program_.functions.find(call.callee_key), Arrival{&fn, &call}, queue);
  }

  void enter(std::map<std::string, FunctionFacts>::const_iterator target, Arrival arrival,
             std::deque<const FunctionFacts*>& queue) {
    if (target == program_.functions.end() || excluded_.count(&target->second) != 0) return;
    if (arrivals_.emplace(&target->second, arrival).second) queue.push_back(&target->second);
  }

  // Every override of a virtual call's callee may run. Without --strict the
  // ones in sight are followed, and that is all; with it, a call whose
  // overrides may not all be in sight is reported.
  void follow_overrides(const FunctionFacts& fn, const Call& call, std::deque<const FunctionFacts*>& queue) {
    const auto& candidates = overrides_.of(call.callee_key);
    for (const auto& key : candidates) enter(program_.functions.find(key), Arrival{&fn, &call, true}, queue);
    if (rule_id_ != "reprise-unresolved" || !call.followed) return;  // the library's own overrides are trusted
    bool all_in_sight = options_.whole_program || call.closed_hierarchy;
    auto without_body = [&](const std::string& key) {
      auto method = program_.virtual_methods.find(key);
      bool pure = method != program_.virtual_methods.end() && method->second.pure;
      return !pure && program_.functions.count(key) == 0;
    };
    if (!all_in_sight || without_body(call.callee_key) ||
        std::any_of(candidates.begin(), candidates.end(), without_body)) {
      report(fn, "makes a virtual call to " + call.callee_name + ", whose overrides are not all in sight", call.where);
    }
  }

  void report(const FunctionFacts& fn, const std::string& does, const Location& where) {
    Finding finding;
    finding.rule = &rule(rule_id_);
    finding.workflow = root_.name;
    finding.chain.push_back({fn.name, does, where});
    for (const FunctionFacts* at = &fn; at != &root_;) {
      const Arrival& arrival = arrivals_.at(at);
      const Call& call = *arrival.call;
      std::string does = arrival.as_override ? "calls " + at->name + ", an override of " + call.callee_name
                                             : "calls " + call.callee_name;
      if (!call.through.empty()) does += " through " + call.through;
      finding.chain.push_back({arrival.from->name, does, call.where});
      at = arrival.from;
    }
    std::reverse(finding.chain.begin(), finding.chain.end());
    finding.where = finding.chain.front().where;
    out_.push_back(std::move(finding));
  }

  const Program& program_;
  const Config& config_;
  const AnalysisOptions& options_;
  const Excluded& excluded_;
  Overrides& overrides_;
  const DerivedHazards& derived_;
  const FunctionFacts& root_;
  const std::string& rule_id_;
  std::vector<Finding>& out_;
  std::map<const FunctionFacts*, Arrival> arrivals_;
};

}  // namespace

std::vector<Finding> analyze(const Program& program, const Config& config, const AnalysisOptions& options) {
  DerivedHazards derived = evaluation_order_hazards(program);
  std::set<std::string> rule_ids;
  for (const auto& [key, fn] : program.functions) {
    for (const auto& hazard : fn.hazards) rule_ids.insert(hazard.rule);
  }
  if (!derived.empty()) rule_ids.insert("reprise-evaluation-order");
  for (const auto& deny : config.deny) rule_ids.insert(deny.rule);
  if (options.strict) {
    rule_ids.insert("reprise-unresolved");  // virtual calls are judged here, over the whole program
  } else {
    rule_ids.erase("reprise-unresolved");
  }

  Excluded excluded;
  if (!config.exclude.empty()) {
    std::map<std::string, bool> file_excluded;
    for (const auto& [key, fn] : program.functions) {
      auto [it, fresh] = file_excluded.try_emplace(fn.where.file, false);
      if (fresh) it->second = config.excluded(fn.where.file);
      if (it->second) excluded.insert(&fn);
    }
  }

  Overrides overrides(program);
  std::vector<Finding> findings;
  for (const auto& [key, fn] : program.functions) {
    if (!program.is_root(fn) || excluded.count(&fn) != 0) continue;
    for (const auto& rule_id : rule_ids) {
      RootSearch(program, config, options, excluded, overrides, derived, fn, rule_id, findings).run();
    }
  }
  auto order = [](const Finding& f) {
    return std::tie(f.where.file, f.where.line, f.where.column, f.rule->id, f.workflow, f.chain.back().where);
  };
  std::sort(findings.begin(), findings.end(), [&](const Finding& a, const Finding& b) { return order(a) < order(b); });
  return findings;
}

}  // namespace reprise::lint
