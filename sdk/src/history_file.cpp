#include "reprise/history_file.hpp"

#include <google/protobuf/util/json_util.h>

#include <cctype>
#include <fstream>
#include <sstream>

#include "reprise/client.hpp"

namespace reprise {

v1::History fetch_history(Connection& connection, const std::string& workflow_id, const std::string& run_id) {
  v1::GetHistoryRequest r;
  r.mutable_workflow_execution()->set_workflow_id(workflow_id);
  r.mutable_workflow_execution()->set_run_id(run_id);
  v1::History all;
  do {
    v1::GetHistoryResponse page = connection.get_history(r, std::chrono::seconds(30));
    for (auto& e : *page.mutable_history()->mutable_events()) *all.add_events() = std::move(e);
    r.set_next_page_token(page.next_page_token());
  } while (!r.next_page_token().empty());
  return all;
}

void write_history_file(const std::string& path, const v1::History& history, HistoryFormat format) {
  std::string bytes;
  if (format == HistoryFormat::kBinary) {
    bytes = history.SerializeAsString();
  } else {
    google::protobuf::util::JsonPrintOptions options;
    options.add_whitespace = true;
    options.preserve_proto_field_names = true;
    if (auto s = google::protobuf::util::MessageToJsonString(history, &bytes, options); !s.ok()) {
      throw Error("cannot write history to " + path + ": " + std::string(s.message()));
    }
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) throw Error("cannot write history to " + path);
}

v1::History read_history_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot read history file " + path + ": it does not exist or is not readable");
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string bytes = buffer.str();
  size_t first = 0;
  while (first < bytes.size() && std::isspace(static_cast<unsigned char>(bytes[first]))) ++first;
  v1::History history;
  if (first < bytes.size() && bytes[first] == '{') {
    if (auto s = google::protobuf::util::JsonStringToMessage(bytes, &history); !s.ok()) {
      throw Error("history file " + path + " is not a valid JSON history: " + std::string(s.message()));
    }
  } else if (!history.ParseFromString(bytes)) {
    throw Error("history file " + path + " is neither JSON nor a binary history");
  }
  if (history.events_size() == 0 || !history.events(0).has_workflow_execution_started()) {
    throw Error("history file " + path + " does not start with WorkflowExecutionStarted");
  }
  return history;
}

}  // namespace reprise
