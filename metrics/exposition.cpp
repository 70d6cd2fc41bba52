// Registry::scrape(): the Prometheus text exposition format, version 0.0.4.
//
//   # HELP name text            (backslash and newline escaped)
//   # TYPE name counter|gauge|histogram
//   name{label="value",...} 42  (backslash, double quote and newline escaped)
//
// A histogram writes name_bucket{...,le="bound"} with cumulative counts,
// ending with le="+Inf", then name_sum and name_count (equal to the +Inf
// bucket, as both come from the same reading of the cells).
#include <charconv>
#include <cmath>

#include "metrics/family.hpp"
#include "metrics/registry_state.hpp"
#include "reprise/metrics.hpp"

namespace reprise::metrics {

namespace {

void append_escaped(std::string& out, std::string_view text, bool quote) {
  for (const char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (quote && c == '"') {
      out += "\\\"";
    } else {
      out.push_back(c);
    }
  }
}

// Go's strconv formatting as Prometheus parses it: the shortest text that
// reads back as the same double, and +Inf, -Inf, NaN.
void append_number(std::string& out, double v) {
  if (std::isnan(v)) {
    out += "NaN";
  } else if (std::isinf(v)) {
    out += v > 0 ? "+Inf" : "-Inf";
  } else {
    char buffer[32];
    const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, v, std::chars_format::general);
    out.append(buffer, end);
  }
}

void append_labels(std::string& out, const detail::Family& f, const std::vector<std::string>& values,
                   const std::string* le) {
  if (values.empty() && le == nullptr) return;
  out.push_back('{');
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out.push_back(',');
    out += f.label_names[i];
    out += "=\"";
    append_escaped(out, values[i], true);
    out.push_back('"');
  }
  if (le != nullptr) {
    if (!values.empty()) out.push_back(',');
    out += "le=\"";
    out += *le;
    out.push_back('"');
  }
  out.push_back('}');
}

void append_family(std::string& out, const detail::Family& f) {
  static constexpr const char* kTypeNames[] = {"counter", "gauge", "histogram"};
  out += "# HELP ";
  out += f.name;
  out.push_back(' ');
  append_escaped(out, f.help, false);
  out += "\n# TYPE ";
  out += f.name;
  out.push_back(' ');
  out += kTypeNames[static_cast<int>(f.kind)];
  out.push_back('\n');

  std::vector<std::string> bound_texts;
  for (double b : f.bounds) {
    bound_texts.emplace_back();
    append_number(bound_texts.back(), b);
  }
  bound_texts.emplace_back("+Inf");

  std::lock_guard lock(f.mu);
  for (const auto& [values, series] : f.by_values) {
    switch (f.kind) {
      case detail::Kind::kCounter:
        out += f.name;
        append_labels(out, f, values, nullptr);
        out.push_back(' ');
        out += std::to_string(series.counter->total());
        out.push_back('\n');
        break;
      case detail::Kind::kGauge:
        out += f.name;
        append_labels(out, f, values, nullptr);
        out.push_back(' ');
        append_number(out, series.gauge->value.load(std::memory_order_relaxed));
        out.push_back('\n');
        break;
      case detail::Kind::kHistogram: {
        const std::vector<int64_t> counts = series.histogram->counts();
        int64_t cumulative = 0;
        for (size_t i = 0; i < counts.size(); ++i) {
          cumulative += counts[i];
          out += f.name;
          out += "_bucket";
          append_labels(out, f, values, &bound_texts[i]);
          out.push_back(' ');
          out += std::to_string(cumulative);
          out.push_back('\n');
        }
        out += f.name;
        out += "_sum";
        append_labels(out, f, values, nullptr);
        out.push_back(' ');
        append_number(out, series.histogram->total_sum());
        out.push_back('\n');
        out += f.name;
        out += "_count";
        append_labels(out, f, values, nullptr);
        out.push_back(' ');
        out += std::to_string(cumulative);
        out.push_back('\n');
        break;
      }
    }
  }
}

}  // namespace

std::string Registry::scrape() const {
  std::lock_guard scraping(state_->scrape_mu);
  for (const auto& hook : state_->hooks) hook();
  std::vector<const detail::Family*> families;
  {
    std::lock_guard lock(state_->mu);
    for (const auto& f : state_->families) families.push_back(f.get());
  }
  std::string out;
  for (const detail::Family* f : families) append_family(out, *f);
  return out;
}

}  // namespace reprise::metrics
