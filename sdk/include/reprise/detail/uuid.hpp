// A version-4 UUID's text from 128 random bits: run ids in the engine and
// ctx.uuid() in workflows.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace reprise::history {

inline std::string format_uuid_v4(uint64_t hi, uint64_t lo) {
  char text[37];
  std::snprintf(text, sizeof text, "%08x-%04x-4%03x-%04x-%012llx", static_cast<unsigned>(hi >> 32),
                static_cast<unsigned>((hi >> 16) & 0xffff), static_cast<unsigned>(hi & 0xfff),
                static_cast<unsigned>(0x8000 | ((lo >> 48) & 0x3fff)),
                static_cast<unsigned long long>(lo & 0xffffffffffffull));
  return text;
}

}  // namespace reprise::history
