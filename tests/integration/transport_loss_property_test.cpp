// Property tests of the completion rule over real loopback sockets, with the receiver's
// diagnostic loss injection as the only source of loss: for every drop rate, burst pattern and
// loss budget, a settled receive reports exactly what is missing, stays within its budget, never
// misses a protected packet and delivers everything else bit-exact.
#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "transport_fixture.hpp"

namespace dlcp::test {
namespace {

constexpr double kBudgets[] = {0.0, 0.01, 0.05, 0.1};
// 30'001 floats end in a short packet (287 floats), which fits inside a 1% budget on its own.
constexpr std::size_t kSizes[] = {30'001, 120'000};
constexpr auto kMessageDeadline = 15s;

std::uint64_t allowed_missing(double budget, std::size_t total) {
  // floor(budget * total) computed exactly on the budget's ppm value.
  const auto ppm = static_cast<std::uint64_t>(std::llround(budget * 1e6));
  return static_cast<std::uint64_t>(total) * ppm / 1'000'000;
}

std::uint64_t expected_packets(std::size_t total, std::size_t stride) {
  return (total + stride - 1) / stride;
}

struct Transfer {
  MessageResult sent;
  MessageResult received;
};

// Sends values from world[from] to world[to] with the given budgets on both sides and returns
// both results; the receive buffer starts as all sentinels.
Transfer transfer(const std::vector<std::unique_ptr<Transport>>& world, int from, int to,
                  std::uint64_t id, const std::vector<float>& values, std::vector<float>& buffer,
                  double send_budget, double recv_budget, int layer = 3, int num_layers = 8) {
  buffer = make_sentinel_buffer(values.size());
  MessageOptions recv_options{.layer = layer,
                              .num_layers = num_layers,
                              .loss_budget = recv_budget,
                              .deadline = kMessageDeadline};
  MessageOptions send_options = recv_options;
  send_options.loss_budget = send_budget;
  auto got = world[static_cast<std::size_t>(to)]->recv(from, id, buffer, recv_options);
  auto sent = world[static_cast<std::size_t>(from)]->send(to, id, values, send_options);
  Transfer result;
  result.received = got.get();
  result.sent = sent.get();
  return result;
}

void check_properties(const std::vector<float>& values, const std::vector<float>& buffer,
                      const Transfer& t, double budget, std::size_t stride = kTestStride) {
  const MessageStats& stats = t.received.stats;
  EXPECT_LE(stats.entries_missing, allowed_missing(budget, values.size()));
  EXPECT_EQ(stats.protected_missing, 0u);
  EXPECT_EQ(stats.packets, expected_packets(values.size(), stride));
  EXPECT_EQ(stats.packets_received + stats.packets_missing, stats.packets);
  EXPECT_EQ(stats.completion == Completion::kComplete, stats.entries_missing == 0)
      << "completion " << to_string(stats.completion) << " with " << stats.entries_missing
      << " entries missing";
  EXPECT_EQ(stats.completion == Completion::kComplete, t.received.missing.empty());
  if (budget == 0.0) {
    EXPECT_EQ(stats.entries_missing, 0u) << "reliable delivery lost entries";
    EXPECT_EQ(stats.completion, Completion::kComplete);
  }
  expect_delivery_matches(values, buffer, t.received);
  // The sender learns the outcome from the receiver's Stop.
  EXPECT_EQ(t.sent.stats.completion, stats.completion);
  EXPECT_EQ(t.sent.stats.packets_missing, stats.packets_missing);
  EXPECT_EQ(t.sent.stats.packets, stats.packets);
}

using LossParam = std::tuple<double, double>;  // drop rate, mean burst length

class LossPropertyTest : public ::testing::TestWithParam<LossParam> {};

TEST_P(LossPropertyTest, SettledReceiveHonoursBudgetAndReportsMissingExactly) {
  const auto [drop_rate, burst] = GetParam();
  auto world = make_world(2, [&](TransportOptions& options) {
    if (options.rank == 1) {
      options.inject.drop_rate = drop_rate;
      options.inject.mean_burst_length = burst;
      options.inject.seed = 0x5EED0000u + static_cast<std::uint64_t>(drop_rate * 1000) * 31 +
                            static_cast<std::uint64_t>(burst);
    }
  });
  std::uint64_t id = 1;
  std::uint64_t retransmitted = 0;
  int partial = 0;  // transfers that settled with entries missing
  for (const double budget : kBudgets) {
    for (const std::size_t size : kSizes) {
      SCOPED_TRACE(::testing::Message() << "budget " << budget << ", " << size << " floats");
      const auto values = make_values(size, id * 7919);
      std::vector<float> buffer;
      const Transfer t = transfer(world, 0, 1, id++, values, buffer, budget, budget);
      check_properties(values, buffer, t, budget);
      if (HasFatalFailure()) return;
      retransmitted += t.sent.stats.packets_retransmitted;
      if (t.received.stats.entries_missing > 0) ++partial;
    }
  }
  const TransportCounters counters = world[1]->counters();
  // At 1% with long bursts a run of a few thousand packets may see no loss at all; from 5% on
  // it always does, and from 20% on some reliable or protected packet is always hit.
  if (drop_rate == 0) {
    EXPECT_EQ(counters.injected_drops, 0u);
  }
  if (drop_rate >= 0.05) {
    EXPECT_GT(counters.injected_drops, 0u);
  }
  if (drop_rate >= 0.2) {
    EXPECT_GT(retransmitted, 0u) << "loss was injected but nothing was retransmitted";
    // Some lenient transfer must have settled with entries missing, or the checks of missing
    // ranges above were vacuous.
    EXPECT_GT(partial, 0) << "no transfer settled with entries missing";
  }
  // Packets still in flight when a message settles within its budget arrive stale; nothing
  // else may be refused on a clean loopback path.
  for (const auto& [reason, count] : counters.rejected_by_reason) {
    EXPECT_EQ(reason, "stale_message") << count << " datagrams refused as " << reason;
  }
}

std::string loss_name(const ::testing::TestParamInfo<LossParam>& info) {
  const auto [drop_rate, burst] = info.param;
  std::ostringstream name;
  name << "Drop" << static_cast<int>(std::lround(drop_rate * 100)) << "pctBurst"
       << static_cast<int>(burst);
  return name.str();
}

INSTANTIATE_TEST_SUITE_P(NoLoss, LossPropertyTest, ::testing::Values(LossParam{0.0, 1.0}),
                         loss_name);
INSTANTIATE_TEST_SUITE_P(Loss, LossPropertyTest,
                         ::testing::Combine(::testing::Values(0.01, 0.05, 0.2, 0.5),
                                            ::testing::Values(1.0, 4.0, 16.0)),
                         loss_name);

TEST(LossProperty, ReliableModeDeliversEverythingAtHalfLoss) {
  const auto values = make_values(400'000, 99);
  std::vector<float> buffer;
  auto world = make_world(2, [](TransportOptions& options) {
    if (options.rank == 0) {
      options.inject.drop_rate = 0.5;
      options.inject.mean_burst_length = 4;
      options.inject.seed = 42;
    }
  });
  // Rank 1 sends to rank 0 this time: the dialling side is the sender.
  const Transfer t = transfer(world, 1, 0, 7, values, buffer, 0.0, 0.0, 0, 1);
  check_properties(values, buffer, t, 0.0);
  EXPECT_EQ(t.received.stats.packets_missing, 0u);
  EXPECT_GT(t.received.stats.rounds, 0u);
  EXPECT_GT(t.sent.stats.packets_retransmitted, 0u);
  EXPECT_GT(world[0]->counters().injected_drops, 0u);
}

TEST(LossProperty, EffectiveBudgetIsTheSmallerOfBothSides) {
  const auto values = make_values(100'000, 5);
  std::vector<float> buffer;
  auto world = make_world(2, [](TransportOptions& options) {
    if (options.rank == 1) {
      options.inject.drop_rate = 0.2;
      options.inject.seed = 4242;
    }
  });
  // Receiver reliable, sender lenient: reliable wins.
  Transfer t = transfer(world, 0, 1, 1, values, buffer, 0.1, 0.0);
  check_properties(values, buffer, t, 0.0);
  // Sender reliable, receiver lenient: reliable wins.
  t = transfer(world, 0, 1, 2, values, buffer, 0.0, 0.1);
  check_properties(values, buffer, t, 0.0);
  // Sender 1%, receiver 10%: at most 1% may be missing.
  t = transfer(world, 0, 1, 3, values, buffer, 0.01, 0.1);
  check_properties(values, buffer, t, 0.01);
}

TEST(LossProperty, LargeDatagramsAtTheRouteMtuUnderBurstyLoss) {
  // mtu 0: the route's MTU, 64 KiB on loopback, so each packet carries 16366 floats and the
  // receiver may place payloads without a copy.
  constexpr std::size_t kLargeStride = (65507 - 40) / 4;
  auto world = make_world(2, [](TransportOptions& options) {
    options.mtu = 0;
    if (options.rank == 1) {
      options.inject.drop_rate = 0.2;
      options.inject.mean_burst_length = 4;
      options.inject.seed = 77;
    }
  });
  std::uint64_t id = 1;
  for (const double budget : kBudgets) {
    SCOPED_TRACE(::testing::Message() << "budget " << budget);
    const auto values = make_values(1'000'003, id);
    std::vector<float> buffer;
    const Transfer t = transfer(world, 0, 1, id++, values, buffer, budget, budget);
    check_properties(values, buffer, t, budget, kLargeStride);
    if (HasFatalFailure()) return;
  }
  EXPECT_GT(world[1]->counters().injected_drops, 0u);
}

// Parity on real sockets: the sender adds a parity packet per 8 protected packets; the receiver
// loses 3% in bursts and rebuilds what it can, small datagrams (copied) and large ones (read
// straight into place, the parity held whole), reliable and with a budget.
TEST(LossProperty, ParityRebuildsLostPacketsOnRealSockets) {
  for (const int mtu : {kTestMtu, 0}) {
    SCOPED_TRACE(::testing::Message() << "mtu " << mtu);
    auto world = make_world(2, [mtu](TransportOptions& options) {
      options.mtu = mtu;
      options.parity_members = 8;
      if (options.rank == 1) {
        options.inject.drop_rate = 0.03;
        options.inject.mean_burst_length = 2;
        options.inject.seed = 9;
      }
    });
    const std::size_t stride = mtu == 0 ? (65507 - 40) / 4 : kTestStride;
    std::uint64_t id = 1;
    for (const double budget : {0.0, 0.05}) {
      SCOPED_TRACE(::testing::Message() << "budget " << budget);
      const auto values = make_values(mtu == 0 ? 4'000'000 : 400'000, id);
      std::vector<float> buffer;
      const Transfer t = transfer(world, 0, 1, id++, values, buffer, budget, budget);
      check_properties(values, buffer, t, budget, stride);
      if (HasFatalFailure()) return;
    }
    const TransportCounters sender = world[0]->counters();
    const TransportCounters receiver = world[1]->counters();
    EXPECT_GT(receiver.injected_drops, 0u);
    EXPECT_GT(sender.parity_sent, 0u);
    EXPECT_GT(receiver.parity_received, 0u);
    EXPECT_GT(receiver.packets_rebuilt, 0u) << "loss was injected but parity rebuilt nothing";
  }
}

}  // namespace
}  // namespace dlcp::test
