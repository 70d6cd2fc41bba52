#include "engine/log.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "../captured_stderr.hpp"

namespace reprise::log {
namespace {

constexpr std::string_view kTs = "2026-12-02T21:24:42.123Z";

TEST(Log, LinesAreLogfmtWithQuotingOnlyWhereNeeded) {
  EXPECT_EQ(format_line(Format::kLogfmt, kTs, Level::kInfo, "workflow closed",
                        {{"workflow_id", "order-1"}, {"status", "COMPLETED"}}),
            "ts=2026-12-02T21:24:42.123Z level=info msg=\"workflow closed\" workflow_id=order-1 status=COMPLETED");
  EXPECT_EQ(
      format_line(Format::kLogfmt, kTs, Level::kWarn, "x",
                  {{"message", "said \"no\"\nat line 2"}, {"empty", ""}, {"eq", "a=b"}}),
      "ts=2026-12-02T21:24:42.123Z level=warn msg=x message=\"said \\\"no\\\"\\nat line 2\" empty=\"\" eq=\"a=b\"");
}

// A workflow id or an error text can hold any byte a client sent: a NUL or
// an escape sequence must not reach the terminal or split a log record.
TEST(Log, LogfmtEscapesEveryControlByte) {
  const std::string id("a\0b\x1b[2Jc\x7f", 9);
  EXPECT_EQ(format_line(Format::kLogfmt, kTs, Level::kInfo, "m", {{"workflow_id", id}}),
            "ts=2026-12-02T21:24:42.123Z level=info msg=m workflow_id=\"a\\u0000b\\u001b[2Jc\\u007f\"");
}

TEST(Log, JsonLinesParseBackToWhatWasLoggedInTheSameKeyOrder) {
  const std::string id("a\0b\x1b\"\\\n", 7);
  const std::string line = format_line(Format::kJson, kTs, Level::kError, "workflow \"closed\"",
                                       {{"workflow_id", id}, {"status", "FAILED"}});
  EXPECT_EQ(line.find('\n'), std::string::npos) << "one record, one line";
  EXPECT_EQ(line.find('\0'), std::string::npos);
  const nlohmann::ordered_json parsed = nlohmann::ordered_json::parse(line);
  std::vector<std::string> keys;
  for (const auto& [key, value] : parsed.items()) keys.push_back(key);
  EXPECT_EQ(keys, (std::vector<std::string>{"ts", "level", "msg", "workflow_id", "status"}));
  EXPECT_EQ(parsed["ts"], kTs);
  EXPECT_EQ(parsed["level"], "error");
  EXPECT_EQ(parsed["msg"], "workflow \"closed\"");
  EXPECT_EQ(parsed["workflow_id"], id);
  EXPECT_EQ(parsed["status"], "FAILED");
}

TEST(Log, JsonReplacesBytesThatAreNotUtf8SoTheLineStillParses) {
  const std::string line = format_line(Format::kJson, kTs, Level::kInfo, "m", {{"id", "ok\xff\xfe-\xc3\xa9"}});
  const nlohmann::json parsed = nlohmann::json::parse(line);
  EXPECT_EQ(parsed["id"], "ok\xEF\xBF\xBD\xEF\xBF\xBD-\xc3\xa9");  // two U+FFFD, the é kept
}

TEST(Log, LevelsAndFormatsFilterAndParse) {
  set_level(Level::kWarn);
  EXPECT_FALSE(enabled(Level::kInfo));
  EXPECT_TRUE(enabled(Level::kError));
  set_level(Level::kInfo);
  EXPECT_EQ(*parse_level("debug"), Level::kDebug);
  EXPECT_EQ(*parse_level("off"), Level::kOff);
  EXPECT_EQ(parse_level("loud").status().message(), "log level must be debug, info, warn, error or off, got 'loud'");
  EXPECT_EQ(*parse_format("json"), Format::kJson);
  EXPECT_EQ(*parse_format("logfmt"), Format::kLogfmt);
  EXPECT_EQ(parse_format("xml").status().message(), "log format must be logfmt or json, got 'xml'");
}

// A line written with its level picked at run time (as a transfer's retry
// is: debug for the first few, then warn) is left out below the level set.
TEST(Log, WriteLeavesOutALineBelowTheLevelSet) {
  set_format(Format::kLogfmt);
  set_level(Level::kWarn);
  const std::string at_warn = ::reprise::testing::captured_stderr_of([] {
    write(Level::kDebug, "transfer task retried", {{"attempt", "1"}});
    write(Level::kWarn, "transfer task keeps failing", {{"attempt", "5"}});
  });
  set_level(Level::kDebug);
  const std::string at_debug = ::reprise::testing::captured_stderr_of([] {
    write(Level::kDebug, "transfer task retried", {{"attempt", "1"}});
  });
  set_level(Level::kInfo);
  EXPECT_EQ(at_warn.find("transfer task retried"), std::string::npos) << at_warn;
  EXPECT_NE(at_warn.find("level=warn msg=\"transfer task keeps failing\" attempt=5"), std::string::npos) << at_warn;
  EXPECT_NE(at_debug.find("level=debug msg=\"transfer task retried\" attempt=1"), std::string::npos) << at_debug;
}

}  // namespace
}  // namespace reprise::log
