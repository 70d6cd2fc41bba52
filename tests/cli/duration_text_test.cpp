// The one duration parser every binary's flags use (tools/command_line).
#include "tools/command_line/duration_text.hpp"

#include <gtest/gtest.h>

namespace reprise::command_line {
namespace {

using namespace std::chrono_literals;

TEST(DurationText, UnitsAddUpAndABareNumberIsSeconds) {
  EXPECT_EQ(parse_duration("90s"), 90s);
  EXPECT_EQ(parse_duration("1h30m"), 90min);
  EXPECT_EQ(parse_duration("7d"), 7 * 24h);
  EXPECT_EQ(parse_duration("250ms"), 250ms);
  EXPECT_EQ(parse_duration("1m30s250ms"), 90250ms);
  EXPECT_EQ(parse_duration("1.5h"), 90min);
  EXPECT_EQ(parse_duration("0"), 0ms);
  EXPECT_EQ(parse_duration("0.2"), 200ms);
  EXPECT_EQ(parse_duration("60"), 60s);
}

TEST(DurationText, WhatNamesNoDurationIsRefused) {
  for (const char* text : {"", "5x", "s", "-1s", "+1s", "1h30", "1e9", "1..5s", ".", "1 s", "1S", "10001000d"}) {
    EXPECT_EQ(parse_duration(text), std::nullopt) << "'" << text << "'";
  }
}

}  // namespace
}  // namespace reprise::command_line
