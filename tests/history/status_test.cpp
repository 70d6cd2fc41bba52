#include "history/status.hpp"

#include <gtest/gtest.h>

namespace reprise {
namespace {

TEST(Status, OkByDefault) {
  Status s;
  EXPECT_TRUE(s.is_ok());
  EXPECT_EQ(s.to_string(), "OK");
}

TEST(Status, CarriesCodeAndMessage) {
  Status s = Status::aborted("execution wf/run is at version 3");
  EXPECT_FALSE(s.is_ok());
  EXPECT_EQ(s.code(), StatusCode::kAborted);
  EXPECT_EQ(s.to_string(), "ABORTED: execution wf/run is at version 3");
  EXPECT_EQ(s.with_context("commit").message(), "commit: execution wf/run is at version 3");
  EXPECT_TRUE(Status::ok().with_context("x").is_ok());
}

// A caller that adds context must not lose what the status tells it to do:
// a retryable one may be sent again, one in doubt may have been committed.
TEST(Status, ContextKeepsRetryableAndInDoubt) {
  Status moved = Status::moved("shard 3 moved").with_context("starting wf-1");
  EXPECT_TRUE(moved.retryable());
  EXPECT_FALSE(moved.in_doubt());
  Status doubt = Status::in_doubt("the connection dropped at COMMIT").with_context("commit");
  EXPECT_EQ(doubt.code(), StatusCode::kUnavailable);
  EXPECT_EQ(doubt.message(), "commit: the connection dropped at COMMIT");
  EXPECT_TRUE(doubt.in_doubt());
  EXPECT_FALSE(doubt.retryable());
}

Result<int> parse_positive(int v) {
  if (v <= 0) return Status::invalid_argument("not positive: " + std::to_string(v));
  return v;
}

Status use_macro(int v) {
  REPRISE_RETURN_IF_ERROR(parse_positive(v).status());
  return Status::ok();
}

TEST(Result, HoldsValueOrError) {
  Result<int> good = parse_positive(4);
  ASSERT_TRUE(good.is_ok());
  EXPECT_EQ(*good, 4);
  EXPECT_TRUE(good.status().is_ok());
  Result<int> bad = parse_positive(-1);
  ASSERT_FALSE(bad.is_ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(use_macro(-2).message(), "not positive: -2");
  EXPECT_TRUE(use_macro(2).is_ok());
}

}  // namespace
}  // namespace reprise
