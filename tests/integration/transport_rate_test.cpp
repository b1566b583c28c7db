// A receiver's fair share over real loopback sockets: the receiver offers each of its current
// senders an equal part of its receive rate in every rate report, and each sender paces at no
// more. Loopback never congests at these rates, so the rate controller itself stays far above the
// share: the paced rate a sender reports is exactly the share offered to it.
#include <cstdint>
#include <future>
#include <memory>
#include <vector>

#include "transport_fixture.hpp"

namespace dlcp::test {
namespace {

constexpr auto kWait = 20s;
constexpr double kReceiveRate = 40e6;  // bytes/s: a 4 MB message takes 0.1 s or more

// Rank 0 receives with `kReceiveRate`; every other rank connects to rank 0 only, so that a
// sender's one pacer is the one towards rank 0 (TransportCounters report the fastest pacer).
// Senders start at a few times the receive rate rather than the default 1.25 GB/s: at that rate a
// whole 4 MB message could leave before the first rate report (one per 2 ms) and overflow the
// loopback socket buffers, whose losses then cut the rate below the share the test looks for.
std::vector<std::unique_ptr<Transport>> make_star(int world_size) {
  const std::uint64_t token = random_job_token();
  std::vector<std::unique_ptr<Transport>> world;
  for (int rank = 0; rank < world_size; ++rank) {
    TransportOptions options = test_options(rank, world_size, token);
    if (rank == 0) options.rate.receive_rate = kReceiveRate;
    if (rank != 0) options.rate.initial_rate = 4 * kReceiveRate;
    world.push_back(Transport::create(options));
  }
  run_per_rank(world_size, [&](int rank) {
    if (rank == 0) {
      for (int peer = 1; peer < world_size; ++peer) {
        world[0]->connect(peer, kLoopback, world[static_cast<std::size_t>(peer)]->control_port());
      }
    } else {
      world[static_cast<std::size_t>(rank)]->connect(0, kLoopback, world[0]->control_port());
    }
  });
  return world;
}

// Every sender sends one message to rank 0 at once. Returns, per sender, whether its paced rate
// was seen at exactly `expected_share` while the transfers ran, and checks every delivery.
std::vector<bool> incast_sees_share(int senders, double expected_share) {
  const auto values = make_values(1'000'000, 31);
  std::vector<std::vector<float>> buffers(static_cast<std::size_t>(senders),
                                          make_sentinel_buffer(values.size()));
  auto world = make_star(senders + 1);
  std::vector<std::future<MessageResult>> sent;
  std::vector<std::future<MessageResult>> received;
  for (int rank = 1; rank <= senders; ++rank) {
    const auto r = static_cast<std::size_t>(rank);
    received.push_back(world[0]->recv(rank, 5, buffers[r - 1], {}));
    sent.push_back(world[r]->send(0, 5, values, {}));
  }
  std::vector<bool> seen(static_cast<std::size_t>(senders), false);
  const auto until = Clock::now() + kWait;
  bool all_done = false;
  while (!all_done && Clock::now() < until) {
    all_done = true;
    for (int rank = 1; rank <= senders; ++rank) {
      const auto r = static_cast<std::size_t>(rank);
      if (world[r]->counters().send_rate_bytes_per_s == expected_share) seen[r - 1] = true;
      if (!ready_within(sent[r - 1], 0ms)) all_done = false;
    }
    std::this_thread::sleep_for(1ms);
  }
  for (std::size_t i = 0; i < sent.size(); ++i) {
    EXPECT_TRUE(ready_within(received[i], kWait)) << "receive from rank " << i + 1;
    EXPECT_TRUE(ready_within(sent[i], kWait)) << "send of rank " << i + 1;
    if (received[i].valid() && ready_within(received[i], 0ms)) {
      const MessageResult result = received[i].get();
      EXPECT_EQ(result.stats.completion, Completion::kComplete);
      expect_delivery_matches(values, buffers[i], result);
    }
  }
  return seen;
}

TEST(ReceiverShare, CountersSayWhatIsOffered) {
  // Rank 0 was given its receive rate; rank 1 was not, and loopback reports no link speed, so it
  // falls back to max_rate.
  auto world = make_star(2);
  EXPECT_EQ(world[0]->counters().receive_rate_bytes_per_s, kReceiveRate);
  EXPECT_EQ(world[1]->counters().receive_rate_bytes_per_s, test_options(1, 2, 0).rate.max_rate);
}

TEST(ReceiverShare, LoneSenderIsOfferedTheWholeReceiveRate) {
  EXPECT_EQ(incast_sees_share(1, kReceiveRate), std::vector<bool>({true}));
}

TEST(ReceiverShare, TwoSendersAreEachOfferedHalf) {
  EXPECT_EQ(incast_sees_share(2, kReceiveRate / 2), std::vector<bool>({true, true}));
}

}  // namespace
}  // namespace dlcp::test
