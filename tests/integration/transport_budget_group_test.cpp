// Budget groups over real loopback sockets: receives that share a loss budget settle a late or
// lossy sender's message with more entries missing than its own budget allows when the group's
// budget covers it, and fail with a named deadline error when it does not.
#include <string>
#include <vector>

#include "transport_fixture.hpp"

namespace dlcp::test {
namespace {

constexpr std::uint64_t kGroup = 77;
constexpr std::size_t kLarge = 100'000;
constexpr std::size_t kSmall = 10'000;

// Ranks 1 and 2 send kLarge floats and rank 3 kSmall to rank 0, which receives all three as one
// budget group of `budget` each. Every packet of rank 3 is lost, and rank 3 protects none, so
// its message can only settle on the group's budget.
struct GroupRun {
  std::vector<std::unique_ptr<Transport>> world;
  std::vector<std::vector<float>> sent;
  std::vector<std::vector<float>> received;
  std::vector<std::future<MessageResult>> receives;
  std::vector<std::future<MessageResult>> sends;

  GroupRun(double budget, std::chrono::milliseconds deadline) {
    world = make_world(4, [](TransportOptions& options) {
      if (options.rank == 0) options.inject.source_drop_rate = {-1.0, -1.0, -1.0, 1.0};
      if (options.rank == 3) options.policy.protected_share = 0.0;
    });
    for (int peer = 1; peer <= 3; ++peer) {
      const std::size_t size = peer == 3 ? kSmall : kLarge;
      sent.push_back(make_values(size, static_cast<std::uint64_t>(peer)));
      received.push_back(make_sentinel_buffer(size));
    }
    for (int peer = 1; peer <= 3; ++peer) {
      MessageOptions options{.loss_budget = budget, .deadline = deadline};
      options.budget_group = kGroup;
      options.budget_group_size = 3;
      receives.push_back(world[0]->recv(peer, 5, received[peer - 1], options));
    }
    for (int peer = 1; peer <= 3; ++peer) {
      sends.push_back(world[static_cast<std::size_t>(peer)]->send(
          0, 5, sent[peer - 1], {.loss_budget = budget, .deadline = deadline}));
    }
  }
};

TEST(BudgetGroup, SettlesALostSendersMessageWithinTheGroupsBudget) {
  // 10% of 210,000 entries is 21,000: rank 3's 10,000 fit although its own budget is 1,000.
  GroupRun run(0.1, 10s);
  std::uint64_t group_missing = 0;
  for (int i = 0; i < 2; ++i) {
    const MessageResult whole = run.receives[static_cast<std::size_t>(i)].get();
    group_missing += whole.stats.entries_missing;
    expect_delivery_matches(run.sent[static_cast<std::size_t>(i)],
                            run.received[static_cast<std::size_t>(i)], whole);
  }
  const MessageResult late = run.receives[2].get();
  EXPECT_EQ(late.stats.completion, Completion::kBoundReached);
  EXPECT_TRUE(late.stats.settled_by_group);
  EXPECT_EQ(late.stats.entries_missing, kSmall);
  expect_delivery_matches(run.sent[2], run.received[2], late);
  group_missing += late.stats.entries_missing;
  EXPECT_LE(group_missing, (2 * kLarge + kSmall) / 10) << "the group overspent its budget";
  // The sender learns it from the receiver's Stop, as for a message settled on its own budget.
  EXPECT_EQ(run.sends[2].get().stats.completion, Completion::kBoundReached);
  const TransportCounters counters = run.world[0]->counters();
  EXPECT_GE(counters.settled_by_group, 1u);
  EXPECT_EQ(counters.settled_complete + counters.settled_within_budget, 3u);
}

TEST(BudgetGroup, BeyondTheGroupsBudgetTheDeadlineNamesTheSender) {
  // 2% of 210,000 is 4,200: rank 3's 10,000 missing entries do not fit.
  GroupRun run(0.02, 1500ms);
  EXPECT_EQ(run.receives[0].get().stats.completion, Completion::kComplete);
  EXPECT_EQ(run.receives[1].get().stats.completion, Completion::kComplete);
  try {
    run.receives[2].get();
    FAIL() << "the lost sender's message settled beyond the group's budget";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kDeadline);
    EXPECT_TRUE(mentions(e.what(), "rank 3"));
  }
  EXPECT_THROW(run.sends[2].get(), Error);
  EXPECT_EQ(run.world[0]->counters().receive_deadlines, 1u);
}

TEST(BudgetGroup, RefusesInconsistentGroups) {
  auto world = make_world(3);
  std::vector<float> a(100);
  std::vector<float> b(100);
  std::vector<float> c(100);
  MessageOptions options{.loss_budget = 0.1, .deadline = 2s};
  options.budget_group = kGroup;
  options.budget_group_size = 1;
  auto first = world[0]->recv(1, 1, a, options);
  // A second receive in a group of one, and one that claims another size.
  auto extra = world[0]->recv(2, 1, b, options);
  options.budget_group_size = 2;
  auto other_size = world[0]->recv(2, 2, c, options);
  for (auto* refused : {&extra, &other_size}) {
    try {
      refused->get();
      FAIL() << "an inconsistent group member was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_TRUE(mentions(e.what(), "budget group 77"));
    }
  }
  MessageOptions size_without_group{.loss_budget = 0.1};
  size_without_group.budget_group_size = 3;
  EXPECT_THROW(world[0]->recv(1, 9, a, size_without_group), Error);
  // The first member still works.
  std::vector<float> values = make_values(100, 1);
  auto sent = world[1]->send(0, 1, values, {.loss_budget = 0.1, .deadline = 2s});
  EXPECT_EQ(first.get().stats.completion, Completion::kComplete);
  sent.get();
}

}  // namespace
}  // namespace dlcp::test
