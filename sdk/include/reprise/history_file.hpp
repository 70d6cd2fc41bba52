// A workflow's history as a file: what `reprise history export` and
// Client::export_history write, and what the replay tester
// (reprise::testing::replay) reads. JSON (protobuf's JSON mapping, for
// people and diffs) or binary (the v1.History message, exact and compact).
#pragma once

#include <string>

#include "reprise/export.hpp"
#include "reprise/v1/history.pb.h"

namespace reprise {

class Connection;

enum class HistoryFormat { kJson, kBinary };

// Every event of the run ("" = the current run), page by page.
REPRISE_EXPORT v1::History fetch_history(Connection& connection, const std::string& workflow_id,
                                         const std::string& run_id = "");

// Throws reprise::Error naming the file when it cannot be written.
REPRISE_EXPORT void write_history_file(const std::string& path, const v1::History& history, HistoryFormat format);
// Either format, told apart by the first byte. Throws reprise::Error naming
// the file and the problem.
REPRISE_EXPORT v1::History read_history_file(const std::string& path);

}  // namespace reprise
