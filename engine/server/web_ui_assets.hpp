// The web UI's files (engine/server/ui/), compiled into the binary by
// engine/server/ui/embed_assets.py: the server needs no files and no network
// at run time. Thread safety: read-only data, any thread.
#pragma once

#include <string_view>
#include <vector>

namespace reprise::engine {

struct WebUiAsset {
  std::string_view path;  // "/index.html", "/app.js", ...
  std::string_view content_type;
  std::string_view content;
};

const std::vector<WebUiAsset>& web_ui_assets();

}  // namespace reprise::engine
