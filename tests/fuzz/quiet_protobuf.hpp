// libprotobuf logs an ERROR line ("String field ... contains invalid UTF-8
// data when parsing a protocol buffer") for every string field with invalid
// UTF-8 that it parses, and parses the message anyway. Fuzzed bytes hit that on
// most inputs: task_token wrote ~100,000 such lines (24 MB) in 15 s, the bulk of
// its log and of its time. Harnesses drop libprotobuf's log below FATAL; the
// servers and the CLI keep it.
#pragma once

#include <google/protobuf/stubs/logging.h>

#include <cstdio>
#include <string>

namespace reprise::fuzz {

inline void protobuf_log(google::protobuf::LogLevel level, const char* file, int line, const std::string& message) {
  if (level >= google::protobuf::LOGLEVEL_FATAL) {
    std::fprintf(stderr, "[libprotobuf FATAL %s:%d] %s\n", file, line, message.c_str());
  }
}

inline const bool protobuf_log_quiet = (google::protobuf::SetLogHandler(&protobuf_log), true);

}  // namespace reprise::fuzz
