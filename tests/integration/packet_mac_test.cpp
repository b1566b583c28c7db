// The optional per-packet MAC over real loopback sockets: transfers stay bit-exact on every
// send path (GSO at MTU 1500, 64 KiB datagrams on loopback, retransmissions under loss), and
// packets forged by someone who knows the job token (but not the secret) never reach a buffer.
// Without the MAC such a forger does reach it: the last test shows the limit of the token alone.
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "transport_fixture.hpp"
#include "udp_injection.hpp"
#include "wire/data_header.hpp"

namespace dlcp::test {
namespace {

std::vector<std::uint8_t> secret(std::uint8_t fill) {
  return std::vector<std::uint8_t>(32, fill);
}

struct MacCase {
  const char* name;
  int mtu;
  double drop;
};

class PacketMacTransfer : public testing::TestWithParam<MacCase> {};

TEST_P(PacketMacTransfer, StaysBitExactBothWays) {
  const MacCase c = GetParam();
  const auto values = make_values(600'000, 11);
  auto forward = make_sentinel_buffer(values.size());
  auto backward = make_sentinel_buffer(values.size());
  const auto shared = secret(0x5A);
  auto world = make_world(2, [&](TransportOptions& options) {
    options.job_secret = shared;
    options.packet_mac = true;
    options.mtu = c.mtu;
    options.inject.drop_rate = c.drop;
  });
  if (c.mtu == kTestMtu) {
    // The trailer takes 24 bytes of every packet.
    EXPECT_EQ(world[0]->max_packet_floats(1), (kTestMtu - 28 - 40 - 24) / 4);
  }
  auto got1 = world[1]->recv(0, 1, forward, {});
  auto got0 = world[0]->recv(1, 2, backward, {});
  auto sent1 = world[0]->send(1, 1, values, {});
  auto sent0 = world[1]->send(0, 2, values, {});
  for (auto* future : {&got1, &got0}) ASSERT_TRUE(ready_within(*future, 30s));
  const MessageResult r1 = got1.get();
  const MessageResult r0 = got0.get();
  EXPECT_EQ(r1.stats.completion, Completion::kComplete);
  expect_delivery_matches(values, forward, r1);
  expect_delivery_matches(values, backward, r0);
  for (auto* future : {&sent1, &sent0}) ASSERT_TRUE(ready_within(*future, 10s));
  for (const auto& transport : world) {
    const auto counters = transport->counters();
    // Retransmissions may bring late duplicates under loss; nothing else may be refused.
    EXPECT_EQ(counters.rejected, reject_count(counters, "duplicate"))
        << "unexpected rejections of authentic packets";
    EXPECT_EQ(reject_count(counters, "bad_mac"), 0u);
    if (c.drop > 0) {
      EXPECT_GT(counters.injected_drops, 0u);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Paths, PacketMacTransfer,
                         testing::Values(MacCase{"Mtu1500Gso", kTestMtu, 0.0},
                                         MacCase{"LoopbackMtu", 0, 0.0},
                                         MacCase{"Mtu1500Loss10pct", kTestMtu, 0.1}),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

TEST(PacketMac, NeedsAJobSecret) {
  TransportOptions options = test_options(0, 2, random_job_token());
  options.packet_mac = true;
  try {
    Transport::create(options);
    FAIL() << "packet_mac without a secret was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_TRUE(mentions(e.what(), "job_secret"));
  }
  options.job_secret = secret(1);
  options.job_secret.resize(8);
  try {
    Transport::create(options);
    FAIL() << "an 8-byte secret was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_TRUE(mentions(e.what(), "16..64"));
  }
}

// A receiver with one data socket (so the test can find it) and a connected sender.
struct ForgeryTarget {
  std::vector<std::unique_ptr<Transport>> world;
  UdpSocketInfo data_socket;
  std::uint64_t token = 0;
};

ForgeryTarget make_target(bool packet_mac) {
  ForgeryTarget target;
  target.token = random_job_token();
  TransportOptions receiver = test_options(0, 2, target.token);
  receiver.paths = 1;
  receiver.job_secret = secret(9);
  receiver.packet_mac = packet_mac;
  target.world.push_back(create_and_find_data_socket(receiver, target.data_socket));
  TransportOptions sender = test_options(1, 2, target.token);
  sender.job_secret = secret(9);
  sender.packet_mac = packet_mac;
  target.world.push_back(Transport::create(sender));
  connect_all(target.world);
  return target;
}

// Sends, for every packet of `forged` (a message of the right geometry), one packet as the real
// sender would (without a MAC) and, when `with_trailer`, one with a made-up MAC trailer. Returns
// how many datagrams were sent.
std::uint64_t forge_every_packet(const ForgeryTarget& target, std::uint64_t id,
                                 const std::vector<float>& forged, bool with_trailer) {
  Injector inject(target.data_socket.port);
  const auto total = static_cast<std::uint32_t>(forged.size());
  const std::uint32_t packets = wire::packet_count(total, static_cast<std::uint16_t>(kTestStride));
  std::uint64_t sent = 0;
  for (std::uint32_t seq = 0; seq < packets; ++seq) {
    wire::DataHeader h = valid_header(target.token, 1, 0, id, total, seq);
    inject.send(data_packet(h, packet_values(forged, seq)));
    ++sent;
    if (with_trailer) {
      h.flags |= wire::data_flags::kAuthenticated;
      auto bytes = data_packet(h, packet_values(forged, seq));
      wire::MacTrailer trailer;
      trailer.counter = 1000 + seq;
      trailer.tag.fill(static_cast<std::uint8_t>(seq));
      bytes.resize(bytes.size() + wire::kMacTrailerBytes);
      wire::encode_mac_trailer(trailer, std::span<std::byte>(bytes).last(wire::kMacTrailerBytes));
      inject.send(bytes);
      ++sent;
    }
    if (sent % 32 == 0) std::this_thread::sleep_for(1ms);  // stay within the socket buffer
  }
  EXPECT_EQ(inject.failures(), 0);
  return sent;
}

TEST(PacketMac, ForgedPacketsNeverReachTheBuffer) {
  const auto real = make_values(200'000, 21);
  const auto forged = make_values(real.size(), 22);
  auto buffer = make_sentinel_buffer(real.size());
  ForgeryTarget target = make_target(true);
  Transport& receiver = *target.world[0];
  Transport& sender = *target.world[1];
  auto got = receiver.recv(1, 1, buffer, {});
  (void)receiver.counters();  // the receive is posted
  const std::uint64_t before = receiver.counters().datagrams_received;
  const std::uint64_t sent = forge_every_packet(target, 1, forged, true);
  ASSERT_TRUE(
      eventually([&] { return receiver.counters().datagrams_received >= before + sent; }, 10s));
  const auto counters = receiver.counters();
  EXPECT_EQ(reject_count(counters, "missing_mac") + reject_count(counters, "bad_mac"), sent);
  EXPECT_EQ(reject_count(counters, "bad_mac"), sent / 2);
  EXPECT_FALSE(ready_within(got, 0ms)) << "forged packets settled the receive";

  auto delivered = sender.send(0, 1, real, {});
  ASSERT_TRUE(ready_within(got, 20s));
  const MessageResult result = got.get();
  expect_delivery_matches(real, buffer, result);
  EXPECT_EQ(reject_count(receiver.counters(), "duplicate"), 0u)
      << "a forged packet took the place of a real one";
  ASSERT_TRUE(ready_within(delivered, 10s));
}

TEST(PacketMac, WithoutItAForgerWhoKnowsTheTokenReachesTheBuffer) {
  // The documented limit of the job token alone (docs/security.md): anyone who can see one
  // packet can write into the buffer of a posted receive.
  const auto forged = make_values(50'000, 23);
  auto buffer = make_sentinel_buffer(forged.size());
  ForgeryTarget target = make_target(false);
  Transport& receiver = *target.world[0];
  auto got = receiver.recv(1, 1, buffer, {});
  (void)receiver.counters();
  forge_every_packet(target, 1, forged, false);
  ASSERT_TRUE(ready_within(got, 10s)) << "the forged packets did not complete the receive";
  expect_delivery_matches(forged, buffer, got.get());
}

}  // namespace
}  // namespace dlcp::test
