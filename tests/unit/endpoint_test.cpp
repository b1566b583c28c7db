// protocol::Endpoint driven directly, two hosts wired back to back on fixed instants: what a
// driver sees come out for reliable transfers, recovery rounds, the loss budget, deadlines,
// early arrivals and lost peers.
#include "protocol/endpoint.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <vector>

#include "wire/values.hpp"

namespace dlcp::protocol {
namespace {

using std::chrono::milliseconds;

constexpr std::uint16_t kStride = 100;  // float32 values per packet

EndpointOptions options_of(int rank, std::uint8_t parity_members = 0) {
  EndpointOptions options;
  options.rank = rank;
  options.parity_members = parity_members;
  options.world_size = 2;
  options.job_token = 7;
  options.receive_rate = 1.25e9;
  return options;
}

PeerLink link() {
  PeerLink link;
  link.address = "test";
  link.stride = kStride;
  link.datagram_bytes = wire::kDataHeaderBytes + kStride * wire::kFloatBytes;
  link.send_paths = 2;
  link.receive_paths = 2;
  return link;
}

// Two endpoints and the wire between them: a driver with nothing of its own to decide. `drop`
// chooses the data packets the wire loses.
struct Wire {
  Endpoint a;
  Endpoint b;
  TimePoint now = TimePoint(std::chrono::seconds(100));
  std::vector<Completed> done_a;
  std::vector<Completed> done_b;
  std::vector<OutgoingControl> frames_a;  // control frames each side sent
  std::vector<OutgoingControl> frames_b;
  std::function<bool(const wire::DataHeader&)> drop = [](const wire::DataHeader&) { return false; };

  // `parity_members`: the sender's TransportOptions::parity_members.
  explicit Wire(std::uint8_t parity_members = 0)
      : a(options_of(0, parity_members)), b(options_of(1)) {
    a.on_peer_joined(1, link(), now);
    b.on_peer_joined(0, link(), now);
  }

  Endpoint& other(Endpoint& e) { return &e == &a ? b : a; }

  // Moves everything that may leave now; true when anything moved.
  bool step(Endpoint& from) {
    bool moved = false;
    Burst burst;
    while (from.next_burst(now, burst)) {
      moved = true;
      burst.run_sent.assign(burst.runs.size(), 1);
      for (const OutgoingPacket& packet : burst.packets) {
        if (drop(packet.header)) continue;
        std::vector<std::byte> datagram(wire::kDataHeaderBytes + packet.header.payload_bytes);
        wire::encode_data_header(packet.header, datagram);
        if (packet.header.is_parity()) {
          EXPECT_EQ(packet.payload.size(), packet.header.payload_bytes);
          std::copy(packet.payload.begin(), packet.payload.end(),
                    datagram.begin() + wire::kDataHeaderBytes);
        } else {
          wire::encode_values(packet.values, packet.header.wire,
                              std::span(datagram).subspan(wire::kDataHeaderBytes));
        }
        const auto header =
            wire::decode_data_packet(datagram, {7, packet.header.dst_rank, 2, false});
        EXPECT_TRUE(header.has_value());
        other(from).on_datagram(*header, datagram, packet.tos, 0, now);
      }
      from.burst_sent(burst, now);
    }
    EndpointOutputs out;
    from.take_outputs(out);
    moved = moved || !out.empty();
    auto& frames = &from == &a ? frames_a : frames_b;
    auto& done = &from == &a ? done_a : done_b;
    for (auto& frame : out.control) {
      frames.push_back(frame);
      if (other(from).connected(&from == &a ? 0 : 1)) {
        other(from).on_control(&from == &a ? 0 : 1, frame.message, now);
      }
    }
    for (auto& completed : out.completions) done.push_back(std::move(completed));
    return moved;
  }

  // Runs until both sides are idle, moving the clock to each one's next wake-up in turn, at most
  // until `until`.
  void run(TimePoint until) {
    for (int guard = 0; guard < 100000; ++guard) {
      while (step(a) || step(b)) {
      }
      TimePoint next = std::min(a.next_timeout(now), b.next_timeout(now));
      for (Endpoint* e : {&a, &b}) {
        if (const auto send = e->next_send(now)) next = std::min(next, *send);
      }
      if (next > until) return;
      now = std::max(now, next);
      a.on_timeout(now);
      b.on_timeout(now);
    }
    FAIL() << "the exchange did not come to rest";
  }
};

std::vector<float> ramp(std::size_t n) {
  std::vector<float> values(n);
  for (std::size_t i = 0; i < n; ++i) values[i] = static_cast<float>(i % 977) - 400.0f;
  return values;
}

SendRequest send_of(std::span<const float> values, double budget = 0) {
  SendRequest request;
  request.key = {1, 42};
  request.token = 1;
  request.values = values;
  request.total_floats = static_cast<std::uint32_t>(values.size());
  request.options.loss_budget = budget;
  return request;
}

ReceiveRequest receive_of(std::span<float> values, double budget = 0) {
  ReceiveRequest request;
  request.key = {0, 42};
  request.token = 2;
  request.values = values;
  request.total_floats = static_cast<std::uint32_t>(values.size());
  request.options.loss_budget = budget;
  return request;
}

TEST(Endpoint, ReliableTransferArrivesWholeInOneRound) {
  Wire wire;
  const auto sent = ramp(10'000);
  std::vector<float> got(sent.size());
  wire.b.post_receive(receive_of(got), wire.now);
  wire.a.post_send(send_of(sent), wire.now);
  wire.run(wire.now + milliseconds(100));
  ASSERT_EQ(wire.done_a.size(), 1u);
  ASSERT_EQ(wire.done_b.size(), 1u);
  EXPECT_FALSE(wire.done_b[0].error);
  EXPECT_EQ(wire.done_b[0].token, 2u);
  EXPECT_EQ(wire.done_b[0].result.stats.completion, Completion::kComplete);
  EXPECT_EQ(wire.done_b[0].result.stats.rounds, 0u);
  EXPECT_EQ(wire.done_a[0].result.stats.packets_sent, 100u);
  EXPECT_EQ(got, sent);
  TransportCounters counters;  // no parity without TransportOptions::parity_members
  wire.a.add_counters(counters);
  EXPECT_EQ(counters.parity_sent, 0u);
  EXPECT_EQ(counters.datagrams_sent, 100u);
}

TEST(Endpoint, LostPacketsComeBackInARecoveryRound) {
  Wire wire;
  wire.drop = [](const wire::DataHeader& h) { return h.round == 0 && h.seq % 3 == 0; };
  const auto sent = ramp(10'000);
  std::vector<float> got(sent.size());
  wire.b.post_receive(receive_of(got), wire.now);
  wire.a.post_send(send_of(sent), wire.now);
  wire.run(wire.now + milliseconds(100));
  ASSERT_EQ(wire.done_b.size(), 1u);
  EXPECT_FALSE(wire.done_b[0].error);
  EXPECT_EQ(wire.done_b[0].result.stats.rounds, 1u);
  EXPECT_EQ(wire.done_a[0].result.stats.packets_retransmitted, 34u);  // seq 0, 3, ..., 99
  EXPECT_EQ(got, sent);
  // The receiver asked once, and only after the sender's round ended.
  int reports = 0;
  for (const auto& frame : wire.frames_b) {
    if (std::holds_alternative<wire::MissingRanges>(frame.message)) ++reports;
  }
  EXPECT_EQ(reports, 1);
}

TEST(Endpoint, BudgetSettlesWithoutTheLostDropEligiblePackets) {
  Wire wire;
  // Every drop-eligible packet of the first round is lost: the budget covers at most half.
  wire.drop = [](const wire::DataHeader& h) { return h.round == 0 && !h.is_protected(); };
  const auto sent = ramp(10'000);
  std::vector<float> got(sent.size(), 0.0f);
  wire.b.post_receive(receive_of(got, 0.2), wire.now);
  wire.a.post_send(send_of(sent, 0.2), wire.now);
  wire.run(wire.now + milliseconds(100));
  ASSERT_EQ(wire.done_b.size(), 1u);
  ASSERT_FALSE(wire.done_b[0].error);
  const MessageResult& result = wire.done_b[0].result;
  EXPECT_EQ(result.stats.completion, Completion::kBoundReached);
  EXPECT_EQ(result.stats.protected_missing, 0u);
  EXPECT_LE(result.stats.entries_missing, 2'000u);  // floor(0.2 * 10000)
  EXPECT_GT(result.stats.entries_missing, 0u);
  std::uint64_t listed = 0;
  for (const auto& range : result.missing) {
    listed += range.count;
    for (std::uint64_t i = range.first; i < range.first + range.count; ++i) {
      EXPECT_EQ(got[i], 0.0f);  // left untouched
    }
  }
  EXPECT_EQ(listed, result.stats.entries_missing);
  // The sender heard the Stop: its message ended too, within budget.
  ASSERT_EQ(wire.done_a.size(), 1u);
  EXPECT_EQ(wire.done_a[0].result.stats.completion, Completion::kBoundReached);
}

// A budget group whose other member another path carries loss-free (the local path): until that
// member joins, the UDP member, missing only what its budget allows, waits for the group; once it
// joins, the member settles on the group's budget.
TEST(Endpoint, AGroupMemberCarriedLosslessElsewhereLetsTheOthersSettle) {
  for (const bool joined : {false, true}) {
    Wire wire;
    int dropped = 0;  // the first two drop-eligible packets: 200 of the 500 entries allowed
    wire.drop = [&](const wire::DataHeader& h) {
      return h.round == 0 && !h.is_protected() && dropped < 2 && ++dropped > 0;
    };
    const auto sent = ramp(10'000);
    std::vector<float> got(sent.size(), 0.0f);
    ReceiveRequest member = receive_of(got, 0.05);
    member.options.budget_group = 9;
    member.options.budget_group_size = 2;
    if (joined) {
      MessageOptions local = member.options;
      EXPECT_FALSE(wire.b.join_group_lossless({0, 43}, local, 10'000, wire.now));
      // The group is full now: a third member is refused, and so is another size.
      local.budget_group_size = 3;
      EXPECT_TRUE(wire.b.join_group_lossless({0, 44}, local, 10'000, wire.now));
    }
    wire.b.post_receive(member, wire.now);
    wire.a.post_send(send_of(sent, 0.05), wire.now);
    wire.run(wire.now + milliseconds(500));
    if (!joined) {
      EXPECT_TRUE(wire.done_b.empty()) << "settled without every member of its group";
      continue;
    }
    ASSERT_EQ(wire.done_b.size(), 1u);
    ASSERT_FALSE(wire.done_b[0].error);
    EXPECT_EQ(wire.done_b[0].result.stats.completion, Completion::kBoundReached);
    EXPECT_EQ(wire.done_b[0].result.stats.entries_missing, 200u);
    EXPECT_EQ(wire.done_b[0].result.stats.rounds, 0u);
  }
}

TEST(Endpoint, ReceiveFailsExactlyAtItsDeadline) {
  Wire wire;
  std::vector<float> got(1000);
  ReceiveRequest request = receive_of(got);
  request.options.deadline = milliseconds(250);
  const TimePoint posted = wire.now;
  wire.b.post_receive(request, posted);
  EXPECT_EQ(wire.b.next_timeout(posted), posted + milliseconds(250));
  wire.b.on_timeout(posted + milliseconds(250) - std::chrono::nanoseconds(1));
  EndpointOutputs out;
  wire.b.take_outputs(out);
  EXPECT_TRUE(out.completions.empty());
  wire.b.on_timeout(posted + milliseconds(250));
  wire.b.take_outputs(out);
  ASSERT_EQ(out.completions.size(), 1u);
  ASSERT_TRUE(out.completions[0].error);
  EXPECT_EQ(out.completions[0].error->code(), ErrorCode::kDeadline);
  EXPECT_NE(std::string(out.completions[0].error->what()).find("no packets at all"),
            std::string::npos);
}

TEST(Endpoint, ArrivalsBeforeTheReceiveIsPostedAreHeldAndReplayed) {
  Wire wire;
  const auto sent = ramp(5'000);
  std::vector<float> got(sent.size());
  wire.a.post_send(send_of(sent), wire.now);
  wire.run(wire.now + milliseconds(1));
  EXPECT_TRUE(wire.done_b.empty());
  TransportCounters held;
  wire.b.add_counters(held);
  EXPECT_EQ(held.backlog_packets, 50u);
  wire.b.post_receive(receive_of(got), wire.now);
  wire.run(wire.now + milliseconds(100));
  ASSERT_EQ(wire.done_b.size(), 1u);
  EXPECT_FALSE(wire.done_b[0].error);
  EXPECT_EQ(got, sent);
}

TEST(Endpoint, ALostPeerFailsItsTransfersAndIsReportedOnce) {
  Wire wire;
  const auto sent = ramp(1'000);
  wire.a.post_send(send_of(sent), wire.now);
  wire.a.on_peer_lost(1, "closed the control connection", ErrorCode::kPeerLost, wire.now);
  EndpointOutputs out;
  wire.a.take_outputs(out);
  ASSERT_EQ(out.lost_peers.size(), 1u);
  EXPECT_TRUE(out.lost_peers[0].job_failure);
  ASSERT_EQ(out.completions.size(), 1u);
  EXPECT_EQ(out.completions[0].error->code(), ErrorCode::kPeerLost);
  ASSERT_TRUE(wire.a.first_failure());
  // A second loss of the same peer changes nothing; a send to it is refused at once.
  wire.a.on_peer_lost(1, "again", ErrorCode::kPeerLost, wire.now);
  wire.a.post_send(send_of(sent), wire.now);
  wire.a.take_outputs(out);
  EXPECT_TRUE(out.lost_peers.empty());
  ASSERT_EQ(out.completions.size(), 1u);
  EXPECT_EQ(out.completions[0].error->code(), ErrorCode::kPeerLost);
}

TEST(Endpoint, AbortFailsEverythingAndTellsThePeer) {
  Wire wire;
  const auto sent = ramp(1'000);
  std::vector<float> got(sent.size());
  wire.a.post_send(send_of(sent), wire.now);
  wire.b.post_receive(receive_of(got), wire.now);
  wire.b.abort("test", wire.now);
  EndpointOutputs out;
  wire.b.take_outputs(out);
  ASSERT_EQ(out.completions.size(), 1u);
  EXPECT_EQ(out.completions[0].error->code(), ErrorCode::kAborted);
  bool told = false;
  for (const auto& frame : out.control) told |= std::holds_alternative<wire::Abort>(frame.message);
  EXPECT_TRUE(told);
}

// Parity: 100 protected packets (a reliable message) in 10 groups of 10; group g holds packets
// g, g + 10, ... (interleaved), and its parity packet's seq is 100 + g.
struct ParityRun {
  std::vector<float> got;
  MessageStats received;
  TransportCounters sender;
  TransportCounters receiver;
};

ParityRun run_with_parity(const std::function<bool(const wire::DataHeader&)>& drop,
                          WireDtype dtype = WireDtype::kFloat32, double budget = 0) {
  Wire wire(10);
  wire.drop = drop;
  const auto sent = ramp(10'000);
  ParityRun run;
  run.got.assign(sent.size(), -1.0f);
  ReceiveRequest receive = receive_of(run.got, budget);
  wire.b.post_receive(receive, wire.now);
  SendRequest send = send_of(sent, budget);
  send.options.wire = dtype;
  // 16-bit packets carry twice the values: the same 100 packets.
  if (dtype != WireDtype::kFloat32) send.options.packet_floats = kStride;
  wire.a.post_send(send, wire.now);
  wire.run(wire.now + milliseconds(100));
  EXPECT_EQ(wire.done_b.size(), 1u);
  EXPECT_EQ(wire.done_a.size(), 1u);
  if (!wire.done_b.empty()) {
    EXPECT_FALSE(wire.done_b[0].error);
    run.received = wire.done_b[0].result.stats;
  }
  wire.a.add_counters(run.sender);
  wire.b.add_counters(run.receiver);
  return run;
}

// Every value arrived, after `rounds` recovery rounds that resent `resent` packets, with
// `rebuilt` packets rebuilt from parity.
void expect_whole(const ParityRun& run, std::uint32_t rounds, std::uint64_t resent,
                  std::uint64_t rebuilt) {
  EXPECT_EQ(run.got, ramp(10'000));
  EXPECT_EQ(run.received.completion, Completion::kComplete);
  EXPECT_EQ(run.received.rounds, rounds);
  EXPECT_EQ(run.sender.datagrams_retransmitted, resent);
  EXPECT_EQ(run.received.packets_rebuilt, rebuilt);
}

TEST(EndpointParity, RebuildsOneLostPacketPerGroupWithoutARound) {
  // The first ten packets are lost: one in each group.
  const ParityRun run =
      run_with_parity([](const wire::DataHeader& h) { return h.round == 0 && h.seq < 10; });
  expect_whole(run, 0, 0, 10);
  EXPECT_EQ(run.sender.parity_sent, 10u);
  EXPECT_EQ(run.sender.datagrams_sent, 110u);  // the wire lost 10 of them after they left
  EXPECT_EQ(run.receiver.parity_received, 10u);
  EXPECT_EQ(run.receiver.packets_rebuilt, 10u);
}

TEST(EndpointParity, TwoLostInOneGroupTakeARound) {
  // Packets 0 and 10 are both in group 0; 5 alone in group 5 is rebuilt.
  const ParityRun run = run_with_parity([](const wire::DataHeader& h) {
    return h.round == 0 && (h.seq == 0 || h.seq == 10 || h.seq == 5);
  });
  // Packet 5 at once, and whichever of 0 and 10 comes back second is rebuilt on the first's
  // arrival (the held parity waited for it), so the other retransmission arrives a duplicate.
  expect_whole(run, 1, 2, 2);
}

TEST(EndpointParity, ALostParityPacketCostsARoundOnlyIfItsGroupLostOne) {
  // Group 3's parity (seq 103) is lost with its member 3; group 4's parity alone is lost.
  const ParityRun run = run_with_parity([](const wire::DataHeader& h) {
    return h.round == 0 && (h.seq == 103 || h.seq == 3 || h.seq == 104);
  });
  expect_whole(run, 1, 1, 0);
}

TEST(EndpointParity, RebuildsSixteenBitPayloadsBitForBit) {
  for (const WireDtype dtype : {WireDtype::kBfloat16, WireDtype::kFloat16}) {
    const ParityRun lossless =
        run_with_parity([](const wire::DataHeader&) { return false; }, dtype);
    const ParityRun lossy = run_with_parity(
        [](const wire::DataHeader& h) { return h.round == 0 && h.seq >= 40 && h.seq < 50; }, dtype);
    EXPECT_EQ(lossy.received.rounds, 0u) << to_string(dtype);
    EXPECT_EQ(lossy.received.packets_rebuilt, 10u) << to_string(dtype);
    // What a rebuilt packet holds is exactly what the lost one would have delivered.
    EXPECT_EQ(std::memcmp(lossy.got.data(), lossless.got.data(), lossy.got.size() * 4), 0)
        << to_string(dtype);
  }
}

TEST(EndpointParity, CoversOnlyTheProtectedPacketsOfABudget) {
  // A 10% budget protects about half the packets; parity covers those, in fewer groups.
  const ParityRun run = run_with_parity(
      [](const wire::DataHeader& h) { return h.round == 0 && h.is_protected() && h.seq % 7 == 0; },
      WireDtype::kFloat32, 0.1);
  EXPECT_GT(run.sender.parity_sent, 0u);
  EXPECT_LT(run.sender.parity_sent, 10u);
  EXPECT_GT(run.received.packets_rebuilt, 0u);
  EXPECT_EQ(run.received.protected_missing, 0u);
}

}  // namespace
}  // namespace dlcp::protocol
