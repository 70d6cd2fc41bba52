// How reprise-lint prints a path: relative to the working directory when the
// file is under it (as compilers print them), absolute otherwise.
#pragma once

#include <filesystem>
#include <string>

namespace reprise::lint {

inline std::string display_path(const std::string& path) {
  std::error_code ec;
  auto cwd = std::filesystem::current_path(ec);
  if (ec) return path;
  auto relative = std::filesystem::path(path).lexically_relative(cwd);
  if (relative.empty() || *relative.begin() == "..") return path;
  return relative.string();
}

}  // namespace reprise::lint
