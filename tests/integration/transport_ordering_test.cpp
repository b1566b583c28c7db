// Ordering over real loopback sockets: receives posted late (early-arrival backlog), several
// messages in flight at once, concurrent transfers between three ranks, and a front-layer message
// overtaking a large back-layer one already being sent.
#include <atomic>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "transport_fixture.hpp"

namespace dlcp::test {
namespace {

constexpr auto kWait = 20s;  // bound on any single wait, so a bug fails instead of hanging

// mtu 0 = the route's MTU (64 KiB datagrams on loopback), else kTestMtu.
void late_recv_completes_from_backlog(int mtu, std::size_t stride) {
  // Buffers first: they must outlive the transports, even when an assertion returns early.
  const auto values = make_values(mtu == 0 ? 2'000'000 : 200'000, 11);
  auto buffer = make_sentinel_buffer(values.size());
  auto world = make_world(2, [&](TransportOptions& options) { options.mtu = mtu; });
  const std::uint64_t packets = (values.size() + stride - 1) / stride;
  auto sent = world[0]->send(1, 77, values, {.layer = 2, .num_layers = 4});

  // Let the sender hand every packet to the kernel and the receiver hold them as early arrivals.
  ASSERT_TRUE(eventually([&] { return world[0]->counters().datagrams_sent >= packets; }, 10s));
  ASSERT_TRUE(eventually([&] { return world[1]->counters().backlog_packets >= packets; }, 10s))
      << "backlog holds " << world[1]->counters().backlog_packets << " of " << packets;
  std::this_thread::sleep_for(100ms);
  ASSERT_FALSE(ready_within(sent, 0ms)) << "send settled before any receive was posted";

  auto got = world[1]->recv(0, 77, buffer, {.layer = 2, .num_layers = 4});
  ASSERT_TRUE(ready_within(got, kWait));
  const MessageResult result = got.get();
  EXPECT_EQ(result.stats.completion, Completion::kComplete);
  EXPECT_EQ(result.stats.packets_received, packets);
  expect_delivery_matches(values, buffer, result);
  ASSERT_TRUE(ready_within(sent, kWait));
  EXPECT_EQ(sent.get().stats.completion, Completion::kComplete);
  EXPECT_EQ(world[1]->counters().backlog_packets, 0u);
}

TEST(Ordering, RecvPostedAfterSenderFinishedCompletesFromBacklog) {
  late_recv_completes_from_backlog(kTestMtu, kTestStride);
}

TEST(Ordering, RecvPostedAfterSenderFinishedCompletesFromBacklogWithLargeDatagrams) {
  late_recv_completes_from_backlog(0, (65507 - 40) / 4);
}

TEST(Ordering, LateRecvUnderLossRecoversMissingPacketsAfterPosting) {
  const auto values = make_values(150'000, 12);
  auto buffer = make_sentinel_buffer(values.size());
  auto world = make_world(2, [](TransportOptions& options) {
    if (options.rank == 1) {
      options.inject.drop_rate = 0.2;
      options.inject.seed = 2024;
    }
  });
  auto sent = world[0]->send(1, 78, values, {});
  // The first round ends with gaps the receiver cannot report yet: nothing is posted.
  ASSERT_TRUE(eventually([&] { return world[1]->counters().backlog_packets > 0; }, 10s));
  std::this_thread::sleep_for(150ms);
  ASSERT_FALSE(ready_within(sent, 0ms));

  auto got = world[1]->recv(0, 78, buffer, {});
  ASSERT_TRUE(ready_within(got, kWait));
  const MessageResult result = got.get();
  EXPECT_EQ(result.stats.completion, Completion::kComplete);
  EXPECT_GT(result.stats.rounds, 0u);
  expect_delivery_matches(values, buffer, result);
  ASSERT_TRUE(ready_within(sent, kWait));
  EXPECT_GT(sent.get().stats.packets_retransmitted, 0u);
}

TEST(Ordering, SeveralMessagesInFlightToTheSamePeerWithDifferentLayers) {
  constexpr int kLayers = 6;
  std::vector<std::vector<float>> values;
  std::vector<std::vector<float>> buffers;
  std::vector<std::vector<float>> back_values;
  std::vector<std::vector<float>> back_buffers;
  for (int layer = 0; layer < kLayers; ++layer) {
    const auto size = static_cast<std::size_t>(20'000 + 23'456 * layer);
    values.push_back(make_values(size, 100 + static_cast<std::uint64_t>(layer)));
    buffers.push_back(make_sentinel_buffer(size));
    back_values.push_back(make_values(size / 2 + 1, 200 + static_cast<std::uint64_t>(layer)));
    back_buffers.push_back(make_sentinel_buffer(size / 2 + 1));
  }
  auto world = make_world(2, [](TransportOptions& options) {
    if (options.rank == 1) {
      options.inject.drop_rate = 0.05;
      options.inject.seed = 7;
    }
  });
  std::vector<std::future<MessageResult>> recvs;
  std::vector<std::future<MessageResult>> sends;
  // Receives posted in reverse layer order, sends in layer order, both directions at once.
  for (int layer = kLayers - 1; layer >= 0; --layer) {
    const auto l = static_cast<std::size_t>(layer);
    const MessageOptions options{.layer = layer, .num_layers = kLayers};
    recvs.push_back(world[1]->recv(0, 1000 + l, buffers[l], options));
    recvs.push_back(world[0]->recv(1, 2000 + l, back_buffers[l], options));
  }
  for (int layer = 0; layer < kLayers; ++layer) {
    const auto l = static_cast<std::size_t>(layer);
    const MessageOptions options{.layer = layer, .num_layers = kLayers};
    sends.push_back(world[0]->send(1, 1000 + l, values[l], options));
    sends.push_back(world[1]->send(0, 2000 + l, back_values[l], options));
  }
  for (auto& recv : recvs) ASSERT_TRUE(ready_within(recv, kWait));
  for (auto& send : sends) ASSERT_TRUE(ready_within(send, kWait));
  for (std::size_t i = 0; i < recvs.size(); ++i) {
    const MessageResult result = recvs[i].get();
    const std::size_t layer = kLayers - 1 - i / 2;
    SCOPED_TRACE(::testing::Message() << "message " << result.message_id);
    EXPECT_EQ(result.stats.completion, Completion::kComplete);
    if (i % 2 == 0) {
      EXPECT_EQ(result.message_id, 1000 + layer);
      expect_delivery_matches(values[layer], buffers[layer], result);
    } else {
      EXPECT_EQ(result.message_id, 2000 + layer);
      expect_delivery_matches(back_values[layer], back_buffers[layer], result);
    }
  }
  for (auto& send : sends) EXPECT_EQ(send.get().stats.completion, Completion::kComplete);
}

TEST(Ordering, ThreeRanksSendToEachOtherConcurrently) {
  constexpr int kWorld = 3;
  // The same message id on every pair: ids are scoped to a pair of ranks.
  constexpr std::uint64_t kId = 5;
  struct Flow {
    int from;
    int to;
    std::vector<float> values;
    std::vector<float> buffer;
    std::future<MessageResult> recv;
    std::future<MessageResult> send;
  };
  std::vector<Flow> flows;
  for (int from = 0; from < kWorld; ++from) {
    for (int to = 0; to < kWorld; ++to) {
      if (from == to) continue;
      const auto size = static_cast<std::size_t>(60'000 + 10'007 * (from * kWorld + to));
      flows.push_back({from,
                       to,
                       make_values(size, static_cast<std::uint64_t>(from * 10 + to)),
                       make_sentinel_buffer(size),
                       {},
                       {}});
    }
  }
  auto world = make_world(kWorld);
  for (auto& flow : flows) {
    flow.recv = world[static_cast<std::size_t>(flow.to)]->recv(flow.from, kId, flow.buffer, {});
  }
  // Each rank posts its sends from its own thread, at the same time as the others.
  run_per_rank(kWorld, [&](int rank) {
    for (auto& flow : flows) {
      if (flow.from != rank) continue;
      flow.send = world[static_cast<std::size_t>(rank)]->send(flow.to, kId, flow.values, {});
    }
  });
  for (auto& flow : flows) {
    SCOPED_TRACE(::testing::Message() << "rank " << flow.from << " -> rank " << flow.to);
    ASSERT_TRUE(ready_within(flow.recv, kWait));
    ASSERT_TRUE(ready_within(flow.send, kWait));
    const MessageResult result = flow.recv.get();
    EXPECT_EQ(result.peer, flow.from);
    EXPECT_EQ(result.stats.completion, Completion::kComplete);
    expect_delivery_matches(flow.values, flow.buffer, result);
    const MessageResult sent = flow.send.get();
    EXPECT_EQ(sent.peer, flow.to);
    EXPECT_EQ(sent.stats.completion, Completion::kComplete);
  }
}

TEST(Ordering, FrontLayerMessageOvertakesLargeBackLayerMessage) {
  // The sender is capped at 100 MB/s so the 16 MiB back-layer message takes ~170 ms on any
  // machine; the front-layer one is posted once it is well under way.
  constexpr double kRate = 100e6;
  constexpr int kLayers = 8;
  const auto big = make_values(4u << 20, 1);  // 16 MiB
  const auto small = make_values(50'000, 2);
  auto big_buffer = make_sentinel_buffer(big.size());
  auto small_buffer = make_sentinel_buffer(small.size());
  auto world = make_world(2, [&](TransportOptions& options) {
    if (options.rank == 0) {
      options.rate.min_rate = 10e6;
      options.rate.initial_rate = kRate;
      options.rate.max_rate = kRate;
    }
  });
  const MessageOptions back{.layer = kLayers - 1, .num_layers = kLayers};
  const MessageOptions front{.layer = 0, .num_layers = kLayers};

  std::atomic<int> order{0};
  int big_done = -1;
  int small_done = -1;
  auto big_recv = world[1]->recv(0, 1, big_buffer, back);
  auto small_recv = world[1]->recv(0, 2, small_buffer, front);
  std::thread big_waiter([&] {
    big_recv.wait();
    big_done = order.fetch_add(1);
  });
  std::thread small_waiter([&] {
    small_recv.wait();
    small_done = order.fetch_add(1);
  });

  auto big_send = world[0]->send(1, 1, big, back);
  const std::uint64_t big_packets = (big.size() + kTestStride - 1) / kTestStride;
  // Wait until about a tenth of the big message has arrived.
  const bool underway =
      eventually([&] { return world[1]->counters().datagrams_received >= big_packets / 10; }, 10s);
  const bool big_was_pending = !ready_within(big_send, 0ms);
  auto small_send = world[0]->send(1, 2, small, front);

  const bool finished = ready_within(big_recv, kWait) && ready_within(small_recv, kWait);
  big_waiter.join();
  small_waiter.join();
  ASSERT_TRUE(underway);
  ASSERT_TRUE(big_was_pending) << "the large message settled before the small one was posted";
  ASSERT_TRUE(finished);

  EXPECT_EQ(small_done, 0) << "front-layer message settled after the back-layer one";
  EXPECT_EQ(big_done, 1);
  const MessageResult small_result = small_recv.get();
  const MessageResult big_result = big_recv.get();
  EXPECT_EQ(small_result.stats.priority_class, 0u);
  EXPECT_EQ(big_result.stats.priority_class, 7u);
  expect_delivery_matches(small, small_buffer, small_result);
  expect_delivery_matches(big, big_buffer, big_result);
  // Both receives were posted together; the front-layer one settled first.
  EXPECT_LT(small_result.stats.seconds, big_result.stats.seconds);
  ASSERT_TRUE(ready_within(small_send, kWait));
  ASSERT_TRUE(ready_within(big_send, kWait));
  EXPECT_EQ(small_send.get().stats.completion, Completion::kComplete);
  EXPECT_EQ(big_send.get().stats.completion, Completion::kComplete);
}

TEST(Ordering, MessageIdCanBeReusedOnceSettled) {
  constexpr int kUses = 3;
  std::vector<std::vector<float>> all_values;
  std::vector<std::vector<float>> buffers;
  for (int use = 0; use < kUses; ++use) {
    all_values.push_back(make_values(30'000, 300 + static_cast<std::uint64_t>(use)));
    buffers.push_back(make_sentinel_buffer(30'000));
  }
  auto world = make_world(2);
  for (int use = 0; use < kUses; ++use) {
    SCOPED_TRACE(::testing::Message() << "use " << use);
    const auto& values = all_values[static_cast<std::size_t>(use)];
    auto& buffer = buffers[static_cast<std::size_t>(use)];
    auto got = world[1]->recv(0, 42, buffer, {.deadline = 5s});
    // Make sure the receive is really posted on the I/O thread before anything is sent: early
    // packets of a reused id are refused (the known engine bug that
    // ReusedMessageIdSentBeforeTheNewRecvIsPosted reproduces).
    (void)world[1]->counters();
    auto sent = world[0]->send(1, 42, values, {.deadline = 5s});
    ASSERT_TRUE(ready_within(got, kWait));
    const MessageResult result = got.get();
    EXPECT_EQ(result.stats.completion, Completion::kComplete);
    expect_delivery_matches(values, buffer, result);
    ASSERT_TRUE(ready_within(sent, kWait));
    EXPECT_EQ(sent.get().stats.completion, Completion::kComplete);
  }
}

TEST(Ordering, ReusedMessageIdSentBeforeTheNewRecvIsPosted) {
  // Both sides finished the first use of id 42; the sender starts the second use before the
  // receiver has posted its receive for it (no packet of the first use is in flight any more,
  // which is all transport.hpp asks of a reused id).
  const auto first = make_values(30'000, 400);
  const auto second = make_values(30'000, 401);
  auto buffer = make_sentinel_buffer(first.size());
  auto second_buffer = make_sentinel_buffer(second.size());
  auto world = make_world(2);
  auto got = world[1]->recv(0, 42, buffer, {.deadline = 5s});
  auto sent = world[0]->send(1, 42, first, {.deadline = 5s});
  ASSERT_TRUE(ready_within(got, kWait));
  ASSERT_TRUE(ready_within(sent, kWait));
  EXPECT_EQ(got.get().stats.completion, Completion::kComplete);
  EXPECT_EQ(sent.get().stats.completion, Completion::kComplete);

  auto second_sent = world[0]->send(1, 42, second, {.deadline = 3s});
  std::this_thread::sleep_for(50ms);
  auto second_got = world[1]->recv(0, 42, second_buffer, {.deadline = 3s});
  ASSERT_TRUE(ready_within(second_got, 5s));
  try {
    const MessageResult result = second_got.get();
    EXPECT_EQ(result.stats.completion, Completion::kComplete);
    expect_delivery_matches(second, second_buffer, result);
  } catch (const Error& e) {
    FAIL() << "second use of the id failed: " << e.what()
           << "; receiver counters: " << world[1]->counters().rejected << " rejected";
  }
  ASSERT_TRUE(ready_within(second_sent, 5s));
}

}  // namespace
}  // namespace dlcp::test
