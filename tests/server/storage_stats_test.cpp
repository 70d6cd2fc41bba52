// GetStorageStats over loopback: the counts a benchmark takes differences of.
#include "server_harness.hpp"

namespace reprise {
namespace {

TEST(StorageStatsRpc, CountsEachStartAsOneTransitionInACommitOfItsOwn) {
  TempDir dir;
  Server server(dir.file("stats.db"));
  v1::GetStorageStatsResponse before;
  ASSERT_TRUE(call(server.stub(), &Stub::GetStorageStats, v1::GetStorageStatsRequest(), &before).ok());
  // One at a time, with no worker: each start is one transition, committed
  // alone before the next is sent.
  constexpr int kStarts = 5;
  for (int i = 0; i < kStarts; ++i) {
    v1::StartWorkflowResponse started;
    ASSERT_TRUE(call(server.stub(), &Stub::StartWorkflow, start_request("wf-" + std::to_string(i)), &started).ok());
  }
  v1::GetStorageStatsResponse after;
  ASSERT_TRUE(call(server.stub(), &Stub::GetStorageStats, v1::GetStorageStatsRequest(), &after).ok());
  EXPECT_EQ(after.transitions() - before.transitions(), kStarts);
  EXPECT_EQ(after.commits() - before.commits(), kStarts);
  ASSERT_EQ(after.batch_sizes_size(), 9);
  EXPECT_EQ(after.batch_sizes(0) - before.batch_sizes(0), kStarts) << "batches of one";
  EXPECT_GE(after.wal_syncs() - before.wal_syncs(), kStarts) << "a WAL sync per commit";
  EXPECT_GT(after.wal_pages(), 0);
}

}  // namespace
}  // namespace reprise
