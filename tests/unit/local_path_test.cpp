// The local path's message protocol between two LocalPath objects linked by real segments, driven
// step by step with fixed instants (no threads, no I/O thread).
#include "transport/local_path.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <vector>

#include "wire/values.hpp"

namespace dlcp::transport {
namespace {

const TimePoint kT0{std::chrono::seconds(100)};

Fd dup_fd(const Fd& fd) {
  return Fd(::dup(fd.get()));
}

struct Pair {
  LocalPath a{2};  // rank 0
  LocalPath b{2};  // rank 1
  std::vector<protocol::Completed> done_a;
  std::vector<protocol::Completed> done_b;
  LocalSegment ring_to_a;  // a third view of what b writes for a

  Pair() {
    LocalLink to_b = new_local_link();
    LocalLink to_a = new_local_link();
    std::string problem;
    to_b.incoming = open_segment(dup_fd(to_a.outgoing.fd), kLocalRingBytes, problem);
    to_a.incoming = open_segment(dup_fd(to_b.outgoing.fd), kLocalRingBytes, problem);
    ring_to_a = open_segment(dup_fd(to_a.outgoing.fd), kLocalRingBytes, problem);
    EXPECT_EQ(problem, "");
    to_b.peer_wake = dup_fd(to_a.wake);
    to_a.peer_wake = dup_fd(to_b.wake);
    a.add_peer(1, std::move(to_b), "rank 1 (test)");
    b.add_peer(0, std::move(to_a), "rank 0 (test)");
  }

  // Pumps both sides until nothing moves, collecting completions.
  void run(TimePoint now, int rounds = 64) {
    for (int i = 0; i < rounds; ++i) {
      a.pump(now);
      b.pump(now);
      collect();
    }
  }
  void collect() {
    std::vector<protocol::Completed> out;
    a.take_completions(out);
    done_a.insert(done_a.end(), out.begin(), out.end());
    b.take_completions(out);
    done_b.insert(done_b.end(), out.begin(), out.end());
  }
};

protocol::SendRequest send_request(int peer, std::uint64_t id, std::span<const float> values,
                                   MessageOptions options = {}) {
  protocol::SendRequest request;
  request.key = {peer, id};
  request.token = id * 10 + 1;
  request.values = values;
  request.total_floats = static_cast<std::uint32_t>(values.size());
  request.options = options;
  return request;
}

protocol::ReceiveRequest receive_request(int peer, std::uint64_t id, std::span<float> values,
                                         std::span<std::uint16_t> contributions = {},
                                         MessageOptions options = {}) {
  protocol::ReceiveRequest request;
  request.key = {peer, id};
  request.token = id * 10 + 2;
  request.values = values;
  request.total_floats = static_cast<std::uint32_t>(values.size());
  request.options = options;
  request.contributions = contributions;
  return request;
}

std::vector<float> ramp(std::size_t n) {
  std::vector<float> values(n);
  for (std::size_t i = 0; i < n; ++i) values[i] = 0.001f * static_cast<float>(i) - 3.0f;
  return values;
}

TEST(LocalPath, SentBeforePostedAndPostedBeforeSentBothDeliver) {
  Pair pair;
  const auto values = ramp(2'000'000);  // 8 MB: more than the ring holds
  std::vector<float> got_early(values.size(), -1.0f);
  std::vector<float> got_late(values.size(), -1.0f);
  // Message 7: the receive is posted first; message 8: the send is.
  pair.b.post_receive(receive_request(0, 7, got_early), kT0);
  pair.a.post_send(send_request(1, 7, values), 1000, kT0);
  pair.a.post_send(send_request(1, 8, values), 1000, kT0);
  pair.run(kT0);
  pair.b.post_receive(receive_request(0, 8, got_late), kT0 + std::chrono::milliseconds(3));
  pair.run(kT0 + std::chrono::milliseconds(5));
  EXPECT_EQ(got_early, values);
  EXPECT_EQ(got_late, values);
  ASSERT_EQ(pair.done_b.size(), 2u);
  ASSERT_EQ(pair.done_a.size(), 2u);
  for (const auto& done : pair.done_b) {
    ASSERT_FALSE(done.error.has_value()) << done.error->what();
    EXPECT_EQ(done.result.stats.completion, Completion::kComplete);
    EXPECT_EQ(done.result.stats.packets, 2000u);
    EXPECT_EQ(done.result.stats.packets_received, 2000u);
    EXPECT_TRUE(done.result.missing.empty());
  }
  // Posted at kT0 + 3 ms, settled at kT0 + 5 ms; announced before it was posted.
  EXPECT_DOUBLE_EQ(pair.done_b[1].result.stats.seconds, 0.002);
  EXPECT_DOUBLE_EQ(pair.done_b[1].result.stats.first_round_seconds, 0.002);
  for (const auto& done : pair.done_a) {
    ASSERT_FALSE(done.error.has_value()) << done.error->what();
    EXPECT_TRUE(done.is_send);
    EXPECT_EQ(done.result.stats.packets_sent, 2000u);
  }
  TransportCounters counters;
  pair.a.add_counters(counters);
  pair.b.add_counters(counters);
  EXPECT_EQ(counters.local_messages_sent, 2u);
  EXPECT_EQ(counters.local_messages_received, 2u);
  EXPECT_EQ(counters.local_bytes_sent, 2 * values.size() * 4);
  EXPECT_EQ(counters.local_bytes_received, 2 * values.size() * 4);
  EXPECT_EQ(counters.settled_complete, 2u);
  EXPECT_EQ(counters.settled_by_rounds[0], 2u);
}

TEST(LocalPath, ContributionsPerPacketAndSixteenBitValuesAsOnTheWire) {
  Pair pair;
  const auto values = ramp(2500);
  // 3 packets of 1000 bf16 values (the last one 500), per-packet counts 1, 2, 3.
  const std::vector<std::uint16_t> counts{1, 2, 3};
  std::vector<float> got(values.size());
  std::vector<std::uint16_t> got_counts(3, 99);
  MessageOptions options;
  options.wire = WireDtype::kBfloat16;
  auto request = send_request(1, 5, values, options);
  request.contributions = counts;
  pair.b.post_receive(receive_request(0, 5, got, got_counts), kT0);
  EXPECT_EQ(got_counts, (std::vector<std::uint16_t>{0, 0, 0})) << "zeroed when posted";
  pair.a.post_send(request, 1000, kT0);
  pair.run(kT0);
  std::vector<float> rounded = values;
  wire::round_to_wire(rounded, WireDtype::kBfloat16, 1000);
  EXPECT_EQ(got, rounded);
  EXPECT_EQ(got_counts, counts);
  TransportCounters counters;
  pair.a.add_counters(counters);
  EXPECT_EQ(counters.local_bytes_sent, values.size() * 2);
}

TEST(LocalPath, ShapeMismatchFailsBothSidesNamingTheSizes) {
  Pair pair;
  const auto values = ramp(10);
  std::vector<float> got(12, 5.0f);
  pair.b.post_receive(receive_request(0, 3, got), kT0);
  pair.a.post_send(send_request(1, 3, values), 1000, kT0);
  pair.run(kT0);
  ASSERT_EQ(pair.done_a.size(), 1u);
  ASSERT_EQ(pair.done_b.size(), 1u);
  ASSERT_TRUE(pair.done_b[0].error.has_value());
  EXPECT_EQ(pair.done_b[0].error->code(), ErrorCode::kProtocol);
  EXPECT_NE(std::string(pair.done_b[0].error->what()).find("sends 10 floats"), std::string::npos);
  ASSERT_TRUE(pair.done_a[0].error.has_value());
  EXPECT_EQ(pair.done_a[0].error->code(), ErrorCode::kProtocol);
  EXPECT_EQ(got, std::vector<float>(12, 5.0f)) << "nothing placed";
}

TEST(LocalPath, DeadlinesFailAtTheirInstant) {
  Pair pair;
  const auto values = ramp(10);
  std::vector<float> got(10);
  MessageOptions options;
  options.deadline = std::chrono::milliseconds(20);
  pair.a.post_send(send_request(1, 1, values, options), 1000, kT0);
  pair.b.post_receive(receive_request(0, 2, got, {}, options), kT0);
  pair.run(kT0);
  ASSERT_TRUE(pair.a.next_timeout().has_value());
  EXPECT_EQ(*pair.a.next_timeout(), kT0 + std::chrono::milliseconds(20));
  pair.a.on_timeout(kT0 + std::chrono::milliseconds(19));
  pair.b.on_timeout(kT0 + std::chrono::milliseconds(19));
  pair.collect();
  EXPECT_TRUE(pair.done_a.empty());
  EXPECT_TRUE(pair.done_b.empty());
  pair.a.on_timeout(kT0 + std::chrono::milliseconds(20));
  pair.b.on_timeout(kT0 + std::chrono::milliseconds(20));
  pair.collect();
  ASSERT_EQ(pair.done_a.size(), 1u);
  ASSERT_EQ(pair.done_b.size(), 1u);
  EXPECT_EQ(pair.done_a[0].error->code(), ErrorCode::kDeadline);
  EXPECT_NE(std::string(pair.done_a[0].error->what()).find("the receive was never posted"),
            std::string::npos);
  EXPECT_EQ(pair.done_b[0].error->code(), ErrorCode::kDeadline);
  EXPECT_NE(std::string(pair.done_b[0].error->what()).find("no packets at all"), std::string::npos);
  TransportCounters counters;
  pair.b.add_counters(counters);
  EXPECT_EQ(counters.receive_deadlines, 1u);
}

TEST(LocalPath, AReceiveThatGaveUpTellsTheSenderAndTakesNoLateData) {
  Pair pair;
  const auto values = ramp(10);
  std::vector<float> got(10, 7.0f);
  MessageOptions options;
  options.deadline = std::chrono::milliseconds(10);
  pair.b.post_receive(receive_request(0, 4, got, {}, options), kT0);
  pair.a.post_send(send_request(1, 4, values), 1000, kT0);
  // b reads the announcement and answers Ready, but a does not pump before b's deadline.
  pair.b.pump(kT0);
  pair.a.pump(kT0);  // Announce out
  pair.b.pump(kT0);  // Ready out
  pair.b.on_timeout(kT0 + std::chrono::milliseconds(10));
  pair.run(kT0 + std::chrono::milliseconds(11));
  EXPECT_EQ(got, std::vector<float>(10, 7.0f));
  ASSERT_EQ(pair.done_a.size(), 1u);
  EXPECT_EQ(pair.done_a[0].error->code(), ErrorCode::kDeadline);
  EXPECT_NE(std::string(pair.done_a[0].error->what()).find("the receiver gave up"),
            std::string::npos);
}

TEST(LocalPath, ALostPeerFailsEverythingWithItsErrorAndRefusesMore) {
  Pair pair;
  const auto values = ramp(10);
  std::vector<float> got(10);
  pair.a.post_send(send_request(1, 1, values), 1000, kT0);
  pair.a.post_receive(receive_request(1, 2, got), kT0);
  pair.a.fail_peer(1, Error(ErrorCode::kPeerLost, 1, "rank 1 (test) closed the control connection"),
                   kT0);
  pair.a.post_send(send_request(1, 3, values), 1000, kT0);
  pair.collect();
  ASSERT_EQ(pair.done_a.size(), 3u);
  for (const auto& done : pair.done_a) {
    ASSERT_TRUE(done.error.has_value());
    EXPECT_EQ(done.error->code(), ErrorCode::kPeerLost);
    EXPECT_EQ(done.error->peer(), 1);
    EXPECT_NE(std::string(done.error->what()).find("rank 1 (test)"), std::string::npos);
  }
  EXPECT_FALSE(pair.a.linked(1));
}

TEST(LocalPath, WhatALostPeerWroteBeforeItWentCountsFirst) {
  // b settles a's message and leaves; its control connection's end reaches a before a read the
  // Settled record, which must still complete the send.
  Pair pair;
  const auto values = ramp(10);
  std::vector<float> got(10);
  pair.a.post_send(send_request(1, 1, values), 1000, kT0);
  pair.b.post_receive(receive_request(0, 1, got), kT0);
  pair.a.pump(kT0);  // Announce
  pair.b.pump(kT0);  // Ready
  pair.a.pump(kT0);  // Data
  pair.b.pump(kT0);  // Settled
  pair.a.fail_peer(1, Error(ErrorCode::kPeerLost, 1, "rank 1 (test) left the job (shut down)"),
                   kT0);
  pair.collect();
  ASSERT_EQ(pair.done_a.size(), 1u);
  EXPECT_FALSE(pair.done_a[0].error.has_value()) << pair.done_a[0].error->what();
  EXPECT_EQ(got, values);
}

TEST(LocalPath, ACorruptRingFailsThePeerAsBroken) {
  Pair pair;
  std::vector<float> got(10);
  pair.a.post_receive(receive_request(1, 1, got), kT0);
  // The write position beyond anything the ring can hold.
  auto* header = reinterpret_cast<RingHeader*>(pair.ring_to_a.mapping.bytes().data());
  header->head.store(kLocalRingBytes * 2);
  pair.a.pump(kT0);
  pair.collect();
  ASSERT_EQ(pair.done_a.size(), 1u);
  EXPECT_EQ(pair.done_a[0].error->code(), ErrorCode::kProtocol);
  EXPECT_NE(
      std::string(pair.done_a[0].error->what()).find("rank 1 (test) corrupted the local path"),
      std::string::npos)
      << pair.done_a[0].error->what();
  const auto broken = pair.a.take_broken_peers();
  ASSERT_EQ(broken.size(), 1u);
  EXPECT_EQ(broken[0].peer(), 1);
  EXPECT_FALSE(pair.a.linked(1));
}

TEST(LocalPath, DuplicatesAreRefusedAndAbortFailsEverything) {
  Pair pair;
  const auto values = ramp(10);
  std::vector<float> got(10);
  pair.a.post_send(send_request(1, 1, values), 1000, kT0);
  pair.a.post_send(send_request(1, 1, values), 1000, kT0);
  pair.b.post_receive(receive_request(0, 9, got), kT0);
  pair.b.post_receive(receive_request(0, 9, got), kT0);
  pair.collect();
  ASSERT_EQ(pair.done_a.size(), 1u);
  EXPECT_EQ(pair.done_a[0].error->code(), ErrorCode::kInvalidArgument);
  ASSERT_EQ(pair.done_b.size(), 1u);
  EXPECT_EQ(pair.done_b[0].error->code(), ErrorCode::kInvalidArgument);
  pair.a.abort("test");
  pair.b.abort("test");
  pair.b.post_receive(receive_request(0, 10, got), kT0);
  pair.collect();
  ASSERT_EQ(pair.done_a.size(), 2u);
  EXPECT_EQ(pair.done_a[1].error->code(), ErrorCode::kAborted);
  ASSERT_EQ(pair.done_b.size(), 3u);
  EXPECT_EQ(pair.done_b[1].error->code(), ErrorCode::kAborted);
  EXPECT_EQ(pair.done_b[2].error->code(), ErrorCode::kAborted);
}

TEST(LocalPath, ParkedReceivesGoToUdpWithWhatIsLeftOfTheirDeadline) {
  LocalPath path(3);
  std::vector<float> got(10);
  MessageOptions options;
  options.deadline = std::chrono::milliseconds(1000);
  path.post_receive(receive_request(2, 4, got, {}, options), kT0);
  const auto parked = path.take_parked(2, kT0 + std::chrono::milliseconds(300));
  ASSERT_EQ(parked.size(), 1u);
  EXPECT_EQ(parked[0].key.id, 4u);
  EXPECT_EQ(parked[0].options.deadline, std::chrono::milliseconds(700));
  EXPECT_TRUE(path.take_parked(2, kT0).empty());
}

}  // namespace
}  // namespace dlcp::transport
