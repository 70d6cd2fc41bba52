#include "sdk/src/address_list.hpp"

#include <cctype>

#include "reprise/errors.hpp"

namespace reprise::detail {

namespace {

std::string trimmed(const std::string& s) {
  const size_t first = s.find_first_not_of(" \t");
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(" \t") - first + 1);
}

// Why `entry` is not HOST:PORT, or "".
std::string entry_problem(const std::string& entry) {
  if (entry.empty()) return "is empty";
  for (char c : entry) {
    if (std::isspace(static_cast<unsigned char>(c)) || c == '/') return "has a host that is not a name or an address";
  }
  const size_t colon = entry.rfind(':');
  if (colon == std::string::npos) return "has no port";
  std::string host = entry.substr(0, colon);
  const std::string port = entry.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string::npos) {
    return "is an IPv6 address without brackets (write [ADDRESS]:PORT)";
  }
  if (host.empty()) return "has no host";
  if (port.empty() || port.size() > 5) return "has no port of 1 to 65535";
  for (char c : port) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return "has no port of 1 to 65535";
  }
  const int number = std::stoi(port);
  if (number < 1 || number > 65535) return "has no port of 1 to 65535";
  return "";
}

}  // namespace

std::vector<std::string> parse_address_list(const std::string& text) {
  if (text.find(',') == std::string::npos) return {text};
  std::vector<std::string> addresses;
  size_t begin = 0;
  while (true) {
    const size_t comma = text.find(',', begin);
    const std::string entry =
        trimmed(text.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin));
    if (std::string problem = entry_problem(entry); !problem.empty()) {
      throw Error("server address list '" + text + "': entry " + std::to_string(addresses.size() + 1) +
                  (entry.empty() ? "" : " '" + entry + "'") + " " + problem +
                  "; give HOST:PORT entries separated by commas");
    }
    addresses.push_back(entry);
    if (comma == std::string::npos) return addresses;
    begin = comma + 1;
  }
}

}  // namespace reprise::detail
