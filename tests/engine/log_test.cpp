#include "engine/log.hpp"

#include <gtest/gtest.h>

namespace reprise::log {
namespace {

TEST(Log, LinesAreLogfmtWithQuotingOnlyWhereNeeded) {
  EXPECT_EQ(format(Level::kInfo, "workflow closed", {{"workflow_id", "order-1"}, {"status", "COMPLETED"}}),
            "level=info msg=\"workflow closed\" workflow_id=order-1 status=COMPLETED");
  EXPECT_EQ(format(Level::kWarn, "x", {{"message", "said \"no\"\nat line 2"}, {"empty", ""}, {"eq", "a=b"}}),
            "level=warn msg=x message=\"said \\\"no\\\"\\nat line 2\" empty=\"\" eq=\"a=b\"");
}

TEST(Log, LevelsFilterAndParse) {
  set_level(Level::kWarn);
  EXPECT_FALSE(enabled(Level::kInfo));
  EXPECT_TRUE(enabled(Level::kError));
  set_level(Level::kInfo);
  EXPECT_EQ(*parse_level("debug"), Level::kDebug);
  EXPECT_EQ(*parse_level("off"), Level::kOff);
  EXPECT_EQ(parse_level("loud").status().message(), "log level must be debug, info, warn, error or off, got 'loud'");
}

}  // namespace
}  // namespace reprise::log
