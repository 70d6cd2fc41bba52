#include "tools/cli/json_payload.hpp"

#include "reprise/codec.hpp"

namespace reprise::cli {

v1::Payload payload_from_json(const std::string& text, const std::string& what) {
  Result<v1::Payload> p = history::payload_from_json(text, what);
  if (!p) throw Error(p.status().message());
  detail::compress_if_large(*p);
  return std::move(p).value();
}

}  // namespace reprise::cli
