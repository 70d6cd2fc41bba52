#include "lint/suppressions.hpp"

#include <cctype>
#include <string>

namespace reprise::lint {

namespace {

constexpr std::string_view kMarker = "reprise-lint: ignore";

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

}  // namespace

Suppressions parse_suppression(std::string_view line) {
  auto comment = line.find("//");
  if (comment == std::string_view::npos) return {};
  auto marker = line.find(kMarker, comment);
  if (marker == std::string_view::npos) return {};
  std::string_view rest = line.substr(marker + kMarker.size());
  if (rest.empty() || rest.front() != '[') return {"*"};
  auto close = rest.find(']');
  if (close == std::string_view::npos) return {"*"};
  Suppressions rules;
  std::string_view list = rest.substr(1, close - 1);
  while (!list.empty()) {
    auto comma = list.find(',');
    auto id = trim(list.substr(0, comma));
    if (!id.empty()) rules.insert(std::string(id));
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return rules.empty() ? Suppressions{"*"} : rules;
}

SuppressionComments::SuppressionComments(std::string_view text) {
  unsigned line_number = 1;
  while (!text.empty()) {
    auto end = text.find('\n');
    auto line = text.substr(0, end);
    if (line.find(kMarker) != std::string_view::npos) {
      auto rules = parse_suppression(line);
      bool alone = trim(line).substr(0, 2) == "//";
      if (!rules.empty()) (alone ? standalone_[line_number + 1] : trailing_[line_number]) = std::move(rules);
    }
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
    ++line_number;
  }
}

Suppressions SuppressionComments::at(unsigned line) const {
  Suppressions result;
  for (const auto* comments : {&trailing_, &standalone_}) {
    auto it = comments->find(line);
    if (it != comments->end()) result.insert(it->second.begin(), it->second.end());
  }
  return result;
}

}  // namespace reprise::lint
