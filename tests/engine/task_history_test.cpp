// A workflow or query task comes with one page of history, as many events as
// the poll asked for, and a next_page_token; GetHistory with it gives the
// rest, up to the last event the task stands for, with a retry's unwritten
// events last.
#include "engine_fixture.hpp"

namespace reprise::engine {
namespace {

using TaskHistoryTest = EngineTest;

v1::PollWorkflowTaskResponse poll_pages_of(EngineTest& t, int page_events) {
  v1::PollWorkflowTaskRequest r;
  r.mutable_task_queue()->set_name("greetings");
  r.set_identity("test-worker");
  r.set_maximum_page_size(page_events);
  auto out = t.call(&Engine::poll_workflow_task, r);
  EXPECT_TRUE(out.is_ok()) << out.status().to_string();
  return out.is_ok() ? *out : v1::PollWorkflowTaskResponse();
}

// The task's first page and every page its token leads to; each page holds
// at most `page_events` written events, plus the unwritten ones on the last
// (`unwritten`). `get_history_pages`, when given, counts the GetHistory calls.
std::vector<v1::HistoryEvent> all_pages(EngineTest& t, const v1::PollWorkflowTaskResponse& task, int page_events,
                                        int* get_history_pages = nullptr, int unwritten = 0) {
  std::vector<v1::HistoryEvent> events(task.history().events().begin(), task.history().events().end());
  std::string token = task.next_page_token();
  int pages = 0;
  for (; !token.empty(); ++pages) {
    if (pages > 1000) {
      ADD_FAILURE() << "the pages never end";
      break;
    }
    v1::GetHistoryRequest r;
    *r.mutable_workflow_execution() = task.workflow_execution();
    r.set_maximum_page_size(page_events);
    r.set_next_page_token(token);
    auto page = t.call(&Engine::get_history, r);
    EXPECT_TRUE(page.is_ok()) << page.status().to_string();
    if (!page.is_ok()) break;
    EXPECT_GE(page->history().events_size(), 1);
    const int allowed = page->next_page_token().empty() ? page_events + unwritten : page_events;
    EXPECT_LE(page->history().events_size(), allowed) << "page " << pages + 1 << " holds more than it was asked for";
    events.insert(events.end(), page->history().events().begin(), page->history().events().end());
    token = page->next_page_token();
  }
  if (get_history_pages != nullptr) *get_history_pages = pages;
  return events;
}

void expect_consecutive_from_1(const std::vector<v1::HistoryEvent>& events) {
  for (size_t i = 0; i < events.size(); ++i) ASSERT_EQ(events[i].event_id(), static_cast<int64_t>(i) + 1);
}

// A workflow that took its first task and then got `signals` signals: a
// history of 3 + 1 + signals + 2 events once its next task is started.
void workflow_with_signals(EngineTest& t, const std::string& id, int signals) {
  ASSERT_TRUE(t.start(id).is_ok());
  ASSERT_TRUE(t.complete(t.poll_workflow().task_token(), {}).is_ok());
  for (int i = 0; i < signals; ++i) ASSERT_TRUE(t.poke(id).is_ok());
}

TEST_F(TaskHistoryTest, AWorkflowTaskComesWithOnePageAndGetHistoryGivesTheRest) {
  workflow_with_signals(*this, "paged-1", 10);
  auto task = poll_pages_of(*this, 4);
  ASSERT_FALSE(task.task_token().empty());
  EXPECT_EQ(task.history().events_size(), 4);
  EXPECT_FALSE(task.next_page_token().empty());

  int pages = 0;
  auto events = all_pages(*this, task, 4, &pages);
  expect_consecutive_from_1(events);
  ASSERT_EQ(static_cast<int64_t>(events.size()), task.started_event_id());
  ASSERT_EQ(task.started_event_id(), 16);
  EXPECT_EQ(pages, 3) << "events 5-16 in GetHistory pages of 4";
  EXPECT_EQ(events.back().event_type(), v1::EVENT_TYPE_WORKFLOW_TASK_STARTED);
  EXPECT_TRUE(complete(task.task_token(), {}).is_ok()) << "the task is the same, however it was read";
}

TEST_F(TaskHistoryTest, ATaskWhoseHistoryFitsInItsPageHasNoToken) {
  workflow_with_signals(*this, "paged-2", 3);
  auto task = poll_pages_of(*this, 0);  // the server's default page: 1000
  EXPECT_EQ(task.history().events_size(), task.started_event_id());
  EXPECT_TRUE(task.next_page_token().empty());
}

TEST_F(TaskHistoryTest, ARetrysUnwrittenEventsComeLastOnTheLastPage) {
  workflow_with_signals(*this, "paged-3", 10);
  auto first_try = poll_pages_of(*this, 1000);
  v1::FailWorkflowTaskRequest failed;
  failed.set_task_token(first_try.task_token());
  failed.mutable_failure()->set_message("a bug");
  ASSERT_TRUE(call(&Engine::fail_workflow_task, failed).is_ok());
  clock_.advance(1s);  // the retry's backoff
  engine_->check_timers();
  const int64_t written = *describe_length("paged-3");

  auto retry = poll_pages_of(*this, 5);
  ASSERT_EQ(retry.attempt(), 2);
  int pages = 0;
  auto events = all_pages(*this, retry, 5, &pages, 2);
  expect_consecutive_from_1(events);
  ASSERT_EQ(static_cast<int64_t>(events.size()), written + 2) << "the retry's scheduled and started, unwritten";
  EXPECT_EQ(events[events.size() - 2].event_type(), v1::EVENT_TYPE_WORKFLOW_TASK_SCHEDULED);
  EXPECT_EQ(events[events.size() - 2].workflow_task_scheduled().attempt(), 2);
  EXPECT_EQ(events.back().event_type(), v1::EVENT_TYPE_WORKFLOW_TASK_STARTED);
  EXPECT_EQ(events.back().event_id(), retry.started_event_id());
  EXPECT_EQ(*describe_length("paged-3"), written) << "reading them wrote nothing";
  EXPECT_EQ(pages, static_cast<int>((written - 5 + 4) / 5)) << "the written events after the first 5, in pages of 5";
}

TEST_F(TaskHistoryTest, AQueryTasksPagesEndWhereTheHistoryEndedWhenItWasHandedOut) {
  workflow_with_signals(*this, "paged-4", 0);
  const int64_t length = *describe_length("paged-4");
  v1::QueryWorkflowRequest q;
  q.mutable_workflow_execution()->set_workflow_id("paged-4");
  q.set_query_type("state");
  q.mutable_timeout()->set_seconds(5);
  std::promise<Result<v1::QueryWorkflowResponse>> answered;
  engine_->query_workflow(q, [&](Result<v1::QueryWorkflowResponse> r) { answered.set_value(std::move(r)); });

  auto task = poll_pages_of(*this, 1);
  ASSERT_EQ(task.queries_size(), 1);
  EXPECT_EQ(task.history().events_size(), 1);
  ASSERT_TRUE(poke("paged-4").is_ok());  // history grows while the worker reads
  int pages = 0;
  auto events = all_pages(*this, task, 1, &pages);
  expect_consecutive_from_1(events);
  EXPECT_EQ(static_cast<int64_t>(events.size()), length);
  EXPECT_EQ(pages, length - 1) << "one event a page";

  v1::CompleteWorkflowTaskRequest answer;
  answer.set_task_token(task.task_token());
  (*answer.mutable_query_results())[task.queries().begin()->first].mutable_answer()->add_payloads()->set_data("ok");
  ASSERT_TRUE(call(&Engine::complete_workflow_task, answer).is_ok());
  EXPECT_TRUE(answered.get_future().get().is_ok());
}

// A client's GetHistory (no task token): pages of the size asked for, each
// token going on where the last page stopped, the last page without one.
TEST_F(TaskHistoryTest, AClientReadsALongHistoryInPagesOfTheSizeItAskedFor) {
  workflow_with_signals(*this, "paged-6", 20);
  const int64_t length = *describe_length("paged-6");
  ASSERT_GE(length, 25);
  std::vector<v1::HistoryEvent> events;
  v1::GetHistoryRequest r;
  r.mutable_workflow_execution()->set_workflow_id("paged-6");
  r.set_maximum_page_size(7);
  int pages = 0;
  do {
    ASSERT_LT(pages, 1000) << "the pages never end";
    auto page = call(&Engine::get_history, r);
    ASSERT_TRUE(page.is_ok()) << page.status().to_string();
    ++pages;
    EXPECT_LE(page->history().events_size(), 7) << "page " << pages << " holds more than it was asked for";
    events.insert(events.end(), page->history().events().begin(), page->history().events().end());
    r.set_next_page_token(page->next_page_token());
  } while (!r.next_page_token().empty());
  expect_consecutive_from_1(events);
  EXPECT_EQ(static_cast<int64_t>(events.size()), length);
  EXPECT_EQ(pages, static_cast<int>((length + 6) / 7));
}

TEST_F(TaskHistoryTest, AMalformedPageTokenIsRefused) {
  ASSERT_TRUE(start("paged-5").is_ok());
  v1::GetHistoryRequest r;
  r.mutable_workflow_execution()->set_workflow_id("paged-5");
  r.set_next_page_token("\xff\xff not a token");
  auto page = call(&Engine::get_history, r);
  ASSERT_FALSE(page.is_ok());
  EXPECT_EQ(page.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace reprise::engine
