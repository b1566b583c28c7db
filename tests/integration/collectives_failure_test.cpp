// A collective notices a failed rank at once, through the transport's failure listener
// (collectives/transfers.hpp), even while every transfer it waits for is with a live rank: it
// fails with the failed rank's error, not at its own deadline. In-process, over real loopback
// transports; rank 2 is outside the collective of workers 0 and 1 (a parameter-server rank).
#include <future>
#include <string>
#include <vector>

#include "collectives/collectives.hpp"
#include "transport_fixture.hpp"

namespace dlcp::test {
namespace {

constexpr auto kCollectiveDeadline = 20s;

// Expects `collective` (already running) to throw rank 2's failure.
void expect_rank_2_failure(std::future<CollectiveResult>& collective) {
  try {
    collective.get();
    ADD_FAILURE() << "the collective succeeded without rank 1";
  } catch (const Error& e) {
    EXPECT_EQ(e.peer(), 2) << e.what();
    EXPECT_EQ(e.code(), ErrorCode::kAborted) << e.what();
    EXPECT_TRUE(mentions(e.what(), "rank 2"));
    EXPECT_TRUE(mentions(e.what(), "gave up"));
  }
}

struct TwoWorkersAndAServer {
  // Declared before the transports: transfers in flight write into them until the abort.
  collectives::Scratch scratch;
  std::vector<float> values = std::vector<float>(100'000, 1.0f);
  std::vector<std::unique_ptr<Transport>> world = make_world(3);
  collectives::Group group{*world[0], 0, 2, 1, world[0]->max_packet_floats(1), 1u << 20, scratch};

  std::future<CollectiveResult> allreduce_on_rank_0() {
    return std::async(std::launch::async, [this] {
      return collectives::ring_allreduce(group, 0, values, {.deadline = kCollectiveDeadline});
    });
  }
  ~TwoWorkersAndAServer() { world[0]->abort("test over"); }
};

TEST(CollectiveFailure, ARankItDoesNotWaitForFailsItAtOnce) {
  TwoWorkersAndAServer job;
  // Rank 1 never joins, so rank 0 waits for it, alive and connected, ...
  auto running = job.allreduce_on_rank_0();
  ASSERT_EQ(running.wait_for(300ms), std::future_status::timeout);
  // ... until rank 2, which the collective has nothing to do with, gives up the job.
  const auto failed = Clock::now();
  job.world[2]->abort("rank 2 gave up (test)");
  ASSERT_EQ(running.wait_for(kCollectiveDeadline), std::future_status::ready);
  EXPECT_LT(seconds_since(failed), 2.0) << "the failure surfaced only after the poll or deadline";
  expect_rank_2_failure(running);
}

TEST(CollectiveFailure, ACollectiveStartedAfterAFailureFailsAtOnce) {
  TwoWorkersAndAServer job;
  job.world[2]->abort("rank 2 gave up (test)");
  ASSERT_TRUE(eventually([&] { return job.world[0]->failure().has_value(); }, 5s));
  const auto started = Clock::now();
  auto running = job.allreduce_on_rank_0();
  ASSERT_EQ(running.wait_for(kCollectiveDeadline), std::future_status::ready);
  EXPECT_LT(seconds_since(started), 2.0);
  expect_rank_2_failure(running);
}

}  // namespace
}  // namespace dlcp::test
