// Hostile traffic over real loopback sockets: while transfers run, a foreign UDP socket sprays
// the receiver's data socket with garbage, packets of another job or for another rank, broken
// headers, packets for unknown, settled or mismatched messages and duplicates of valid packets
// (crafted with the wire encoder), and foreign TCP clients knock on its control port. The
// transfers must still complete bit-exact, and every refusal must be counted under its reason.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "transport_fixture.hpp"
#include "udp_injection.hpp"
#include "wire/control.hpp"
#include "wire/data_header.hpp"
#include "wire/reject_reason.hpp"

namespace dlcp::test {
namespace {

using wire::RejectReason;

// Counts by reason, as the transport reports them.
std::map<std::string, std::uint64_t> by_reason(const TransportCounters& counters) {
  return {counters.rejected_by_reason.begin(), counters.rejected_by_reason.end()};
}

std::string name(RejectReason reason) {
  return std::string(wire::to_string(reason));
}

// Waits until the receiver has read `count` datagrams in total, so the kernel never holds more
// than one batch of injected datagrams (no drops from a full socket buffer).
void wait_received(Transport& transport, std::uint64_t count) {
  EXPECT_TRUE(eventually([&] { return transport.counters().datagrams_received >= count; }, 5s))
      << "receiver read " << transport.counters().datagrams_received << " of " << count;
}

// A TCP client of the receiver's control port: sends bytes, then waits (bounded) for the
// transport to close the connection.
bool knock(std::uint16_t port, const std::vector<std::byte>& bytes) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool closed = false;
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0 &&
      ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size())) {
    std::array<char, 256> sink{};
    for (;;) {
      pollfd waiter{fd, POLLIN, 0};
      if (::poll(&waiter, 1, 5000) <= 0) break;
      const ssize_t n = ::recv(fd, sink.data(), sink.size(), 0);
      if (n <= 0) {
        closed = true;
        break;
      }
    }
  }
  ::close(fd);
  return closed;
}

TEST(Hostile, TransfersSurviveForeignTrafficAndEveryRefusalIsCounted) {
  std::uint64_t token = 0;
  constexpr std::uint16_t kReceiver = 0;
  constexpr std::uint16_t kSender = 1;
  // The receiver keeps one data socket (so its port can be found) and a backlog of 64 KiB:
  // 44 full packets of 1472 bytes fit, the 45th is refused.
  constexpr std::size_t kBacklogBytes = 64 * 1024;
  const std::size_t datagram_bytes = wire::kDataHeaderBytes + kTestStride * wire::kFloatBytes;
  const std::uint64_t backlog_capacity = kBacklogBytes / datagram_bytes;

  // Every buffer is declared before the transports so it outlives them, even when an assertion
  // returns early while a transfer is still running.
  const auto settled_values = make_values(20'000, 1);
  auto settled_buffer = make_sentinel_buffer(settled_values.size());
  const auto values = make_values(400'000, 2);
  auto buffer = make_sentinel_buffer(values.size());
  const auto more = make_values(50'000, 3);
  auto more_buffer = make_sentinel_buffer(more.size());
  auto back_buffer = make_sentinel_buffer(more.size());
  UdpSocketInfo data_socket;
  std::vector<std::unique_ptr<Transport>> world;
  {
    token = random_job_token();
    TransportOptions receiver_options = test_options(kReceiver, 2, token);
    receiver_options.paths = 1;
    receiver_options.backlog_bytes = kBacklogBytes;
    world.push_back(create_and_find_data_socket(receiver_options, data_socket));
    ASSERT_FALSE(HasFailure());
    TransportOptions sender_options = test_options(kSender, 2, token);
    // ~100 ms for the 1.6 MB message, so the concurrent garbage overlaps it on any machine.
    sender_options.rate.min_rate = 1e6;
    sender_options.rate.initial_rate = 16e6;
    sender_options.rate.max_rate = 16e6;
    world.push_back(Transport::create(sender_options));
    connect_all(world);
  }
  Transport& receiver = *world[kReceiver];
  Transport& sender = *world[kSender];
  Injector inject(data_socket.port);
  ASSERT_TRUE(inject.ok());

  std::map<std::string, std::uint64_t> injected;  // hostile datagrams sent, by expected reason
  std::uint64_t expected_received = 0;            // datagrams the receiver should have read
  std::mt19937_64 rng(0xBADF00D);
  auto random_bytes = [&](std::size_t size) {
    std::vector<std::byte> bytes(size);
    for (auto& b : bytes) b = static_cast<std::byte>(rng());
    return bytes;
  };
  // Sends one hostile datagram while no transfer runs; every 32 datagrams it waits until the
  // receiver has read everything so far, so its socket buffer never overflows.
  auto send_one = [&](const std::vector<std::byte>& bytes) {
    inject.send(bytes);
    if (++expected_received % 32 == 0) wait_received(receiver, expected_received);
  };
  auto send_counted = [&](const std::vector<std::byte>& bytes, const std::string& reason) {
    send_one(bytes);
    ++injected[reason];
  };
  auto drain = [&] {
    // Everything injected so far has been read once the count stops moving.
    std::uint64_t last = receiver.counters().datagrams_received;
    for (int quiet = 0; quiet < 20;) {
      std::this_thread::sleep_for(5ms);
      const std::uint64_t now = receiver.counters().datagrams_received;
      quiet = now == last ? quiet + 1 : 0;
      last = now;
    }
  };

  // --- A settled message, then stale packets for it. -------------------------------------------
  constexpr std::uint64_t kSettledId = 1;
  {
    auto got = receiver.recv(kSender, kSettledId, settled_buffer, {});
    // Commands run in order on the I/O thread: once counters() returns the receive is posted, so
    // no packet of this message lands in the (deliberately tiny) early-arrival backlog.
    (void)receiver.counters();
    auto sent = sender.send(kReceiver, kSettledId, settled_values, {});
    ASSERT_TRUE(ready_within(got, 10s));
    expect_delivery_matches(settled_values, settled_buffer, got.get());
    ASSERT_TRUE(ready_within(sent, 10s));
  }
  drain();
  const TransportCounters clean = receiver.counters();
  EXPECT_EQ(clean.rejected, 0u) << "rejections before any hostile traffic";
  expected_received = clean.datagrams_received;
  const auto settled_total = static_cast<std::uint32_t>(settled_values.size());
  constexpr int kStale = 12;
  for (std::uint32_t seq = 0; seq < kStale; ++seq) {
    send_one(data_packet(valid_header(token, kSender, kReceiver, kSettledId, settled_total, seq),
                         packet_values(settled_values, seq)));
  }

  // --- The main message: its receive is posted, the sender has not started. --------------------
  constexpr std::uint64_t kMainId = 2;
  const auto total = static_cast<std::uint32_t>(values.size());
  auto got = receiver.recv(kSender, kMainId, buffer, {});
  (void)receiver.counters();  // the receive is posted: its packets are not early arrivals
  const wire::DataHeader good = valid_header(token, kSender, kReceiver, kMainId, total, 5);
  const auto good_packet = data_packet(good, packet_values(values, 5));

  // Garbage of every size below a header, and random garbage of many sizes above it (its first
  // byte is never the protocol version).
  for (std::size_t size = 0; size < wire::kDataHeaderBytes; ++size) {
    send_counted(random_bytes(size), name(RejectReason::kTooShort));
  }
  for (const std::size_t size :
       {40, 41, 64, 100, 333, 1000, 1472, 1500, 4096, 9000, 30000, 65507}) {
    auto bytes = random_bytes(size);
    bytes[0] = std::byte{0xEE};
    send_counted(bytes, name(RejectReason::kBadVersion));
  }
  // Truncated headers of a valid packet.
  for (std::size_t size = 1; size < wire::kDataHeaderBytes; size += 3) {
    send_counted(
        std::vector<std::byte>(good_packet.begin(), good_packet.begin() + static_cast<long>(size)),
        name(RejectReason::kTooShort));
  }
  // Broken fixed fields.
  auto mutated = [&](std::size_t offset, std::byte value) {
    auto bytes = good_packet;
    bytes[offset] = value;
    return bytes;
  };
  for (int i = 0; i < 8; ++i) {
    // Versions 1 (before pair_seq) and 2 (before wire dtypes), then 4..9.
    send_counted(mutated(0, std::byte{static_cast<unsigned char>(i < 2 ? 1 + i : 2 + i)}),
                 name(RejectReason::kBadVersion));
    send_counted(mutated(1, std::byte{0x80}), name(RejectReason::kBadFlags));
  }
  // Another job, another destination, impossible sources, bad classes and geometry.
  for (int i = 0; i < 20; ++i) {
    wire::DataHeader h = good;
    h.job_token = token + 1 + static_cast<std::uint64_t>(i);
    send_counted(data_packet(h, packet_values(values, 5)), name(RejectReason::kWrongJob));
    h = good;
    h.dst_rank = static_cast<std::uint16_t>(i % 2 == 0 ? kSender : 9);
    send_counted(data_packet(h, packet_values(values, 5)), name(RejectReason::kWrongDestination));
  }
  for (int i = 0; i < 10; ++i) {
    wire::DataHeader h = good;
    h.src_rank = static_cast<std::uint16_t>(i % 2 == 0 ? kReceiver : 2 + i);
    send_counted(data_packet(h, packet_values(values, 5)), name(RejectReason::kBadSourceRank));
    h = good;
    h.priority_class = static_cast<std::uint8_t>(8 + i);
    send_counted(data_packet(h, packet_values(values, 5)), name(RejectReason::kBadPriority));
    h = good;
    h.seq = total;  // beyond the last packet
    send_counted(data_packet(h, packet_values(values, 5)), name(RejectReason::kBadGeometry));
    h = good;
    h.stride_floats = 0;
    send_counted(data_packet(h, packet_values(values, 5)), name(RejectReason::kBadGeometry));
    // Payload one float short, and a length field that disagrees with the datagram.
    send_counted(data_packet(good, packet_values(values, 5).first(kTestStride - 1)),
                 name(RejectReason::kBadPayloadLength));
    auto bytes = good_packet;
    bytes.resize(bytes.size() - 2);
    send_counted(bytes, name(RejectReason::kBadPayloadLength));
  }
  // The posted message's id with another geometry: a mismatch, refused without harm.
  for (int i = 0; i < 6; ++i) {
    wire::DataHeader h = valid_header(token, kSender, kReceiver, kMainId, total / 2, 0);
    send_counted(data_packet(h, packet_values(values, 0)), name(RejectReason::kMismatchedMessage));
  }
  // Valid-looking packets for messages nobody posted: the backlog holds the first ones and
  // refuses the rest.
  constexpr std::uint64_t kUnknown = 100;
  for (std::uint64_t i = 0; i < kUnknown; ++i) {
    wire::DataHeader h = valid_header(token, kSender, kReceiver, 1000 + i, total, 0);
    send_counted(data_packet(h, packet_values(values, 0)), "unknown_or_backlog");
  }
  // A valid packet of the main message (correct payload), then duplicates of it; the real copy
  // from the sender will be a duplicate too.
  constexpr std::uint64_t kDuplicates = 15;
  send_one(good_packet);
  for (std::uint64_t i = 0; i < kDuplicates; ++i) send_counted(good_packet, "duplicates");
  wait_received(receiver, expected_received);

  // Foreign TCP clients on the control port: garbage length, another job's Hello, a Hello for a
  // rank that is already connected, and a first message that is not a Hello.
  wire::Hello hello;
  hello.job_token = token ^ 0xFFFF;
  hello.rank = kSender;
  hello.world_size = 2;
  hello.data_sockets.push_back({0x7F000001u, 9});
  std::vector<std::byte> frame;
  wire::encode_control(hello, frame);
  EXPECT_TRUE(knock(receiver.control_port(), frame)) << "another job's Hello was not refused";
  hello.job_token = token;
  frame.clear();
  wire::encode_control(hello, frame);
  EXPECT_TRUE(knock(receiver.control_port(), frame)) << "a second rank 1 was not refused";
  frame.clear();
  wire::encode_control(wire::Stop{.message_id = kMainId}, frame);
  EXPECT_TRUE(knock(receiver.control_port(), frame)) << "a non-Hello first frame was accepted";
  EXPECT_TRUE(knock(receiver.control_port(), std::vector<std::byte>(4, std::byte{0xFF})))
      << "an oversized frame length was not refused";

  // --- The transfer runs while garbage keeps arriving. -----------------------------------------
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> concurrent_sent{0};
  std::uint64_t concurrent_short = 0;
  std::uint64_t concurrent_job = 0;
  std::uint64_t concurrent_version = 0;
  std::thread garbage([&] {
    Injector background(data_socket.port);
    std::mt19937_64 local(7);
    wire::DataHeader other_job = good;
    other_job.job_token = token ^ 0x5555;
    const auto other_job_packet = data_packet(other_job, packet_values(values, 5));
    while (!stop.load()) {
      std::vector<std::byte> bytes;
      switch (local() % 3) {
        case 0:
          bytes.resize(local() % wire::kDataHeaderBytes);
          ++concurrent_short;
          break;
        case 1:
          bytes = other_job_packet;
          ++concurrent_job;
          break;
        default:
          bytes.resize(wire::kDataHeaderBytes + local() % 1400);
          for (auto& b : bytes) b = static_cast<std::byte>(local());
          bytes[0] = std::byte{0};
          ++concurrent_version;
          break;
      }
      background.send(bytes);
      concurrent_sent.fetch_add(1);
      std::this_thread::sleep_for(200us);
    }
  });
  std::this_thread::sleep_for(10ms);
  const std::uint64_t before_send = concurrent_sent.load();
  auto sent = sender.send(kReceiver, kMainId, values, {});
  const bool settled = ready_within(got, 20s);
  const std::uint64_t during = concurrent_sent.load() - before_send;
  stop.store(true);
  garbage.join();
  ASSERT_TRUE(settled) << "the transfer did not survive the hostile traffic";
  const MessageResult result = got.get();
  EXPECT_EQ(result.stats.completion, Completion::kComplete);
  expect_delivery_matches(values, buffer, result);
  ASSERT_TRUE(ready_within(sent, 10s));
  EXPECT_EQ(sent.get().stats.completion, Completion::kComplete);
  EXPECT_GT(during, 0u) << "no garbage arrived while the transfer ran";
  injected[name(RejectReason::kTooShort)] += concurrent_short;
  injected[name(RejectReason::kWrongJob)] += concurrent_job;
  injected[name(RejectReason::kBadVersion)] += concurrent_version;

  // --- Every refusal is counted under its reason. ---------------------------------------------
  drain();
  const TransportCounters counters = receiver.counters();
  const auto counts = by_reason(counters);
  auto count = [&](RejectReason reason) {
    const auto it = counts.find(name(reason));
    return it == counts.end() ? std::uint64_t{0} : it->second;
  };
  // Datagrams the kernel dropped because the socket buffer was full never reached the transport;
  // without such drops every count below is exact.
  const auto socket_now = udp_socket(data_socket.inode);
  ASSERT_TRUE(socket_now.has_value());
  const std::uint64_t kernel_drops = socket_now->drops - data_socket.drops;
  EXPECT_EQ(inject.failures(), 0);
  RecordProperty("kernel_drops", static_cast<int>(kernel_drops));

  auto expect_about = [&](std::uint64_t actual, std::uint64_t expected, const std::string& what) {
    EXPECT_LE(actual, expected) << what;
    EXPECT_GE(actual + kernel_drops, expected)
        << what << " (kernel dropped " << kernel_drops << ")";
  };
  // Reasons only hostile datagrams can produce: exact.
  for (const RejectReason reason :
       {RejectReason::kTooShort, RejectReason::kBadVersion, RejectReason::kBadFlags,
        RejectReason::kWrongDestination, RejectReason::kBadPriority, RejectReason::kBadGeometry,
        RejectReason::kBadPayloadLength, RejectReason::kMismatchedMessage}) {
    expect_about(count(reason), injected[name(reason)], name(reason));
  }
  // wrong_job and bad_source_rank also count the refused Hellos (one each).
  expect_about(count(RejectReason::kWrongJob), injected[name(RejectReason::kWrongJob)] + 1,
               "wrong_job");
  expect_about(count(RejectReason::kBadSourceRank),
               injected[name(RejectReason::kBadSourceRank)] + 1, "bad_source_rank");
  // Unknown messages: the backlog keeps what fits and counts the rest.
  EXPECT_LE(counters.backlog_packets, backlog_capacity);
  expect_about(count(RejectReason::kUnknownMessage) + counters.backlog_packets, kUnknown,
               "unknown_message + backlog");
  if (kernel_drops == 0) {
    EXPECT_EQ(counters.backlog_packets, backlog_capacity);
    EXPECT_EQ(count(RejectReason::kUnknownMessage), kUnknown - backlog_capacity);
  }
  // Duplicates: every injected copy after the first, plus the sender's own copy of that packet
  // (and, only if the receiver asked for retransmissions, packets it asked for too early).
  EXPECT_GE(count(RejectReason::kDuplicate) + kernel_drops, kDuplicates);
  if (result.stats.rounds == 0) {
    EXPECT_LE(count(RejectReason::kDuplicate), kDuplicates + 1);
  }
  // Stale packets: at least the injected ones; late packets of the real sender may add some.
  EXPECT_GE(count(RejectReason::kStaleMessage) + kernel_drops, std::uint64_t{kStale});
  // Control-plane refusals.
  EXPECT_EQ(count(RejectReason::kBadControlType), 1u);
  EXPECT_EQ(count(RejectReason::kBadControlField), 1u);

  std::uint64_t sum = 0;
  for (const auto& [reason, n] : counts) sum += n;
  EXPECT_EQ(sum, counters.rejected);

  // The endpoint is still healthy: another message goes through, both ways.
  auto got_more = receiver.recv(kSender, 3, more_buffer, {});
  auto got_back = sender.recv(kReceiver, 4, back_buffer, {});
  auto sent_more = sender.send(kReceiver, 3, more, {});
  auto sent_back = receiver.send(kSender, 4, more, {});
  ASSERT_TRUE(ready_within(got_more, 10s));
  ASSERT_TRUE(ready_within(got_back, 10s));
  expect_delivery_matches(more, more_buffer, got_more.get());
  expect_delivery_matches(more, back_buffer, got_back.get());
  ASSERT_TRUE(ready_within(sent_more, 10s));
  ASSERT_TRUE(ready_within(sent_back, 10s));
}

// With the route's MTU (64 KiB on loopback) every data packet is a ~64 KiB datagram, which the
// receiver may read header-first and place without a copy. Foreign datagrams of every size
// (optionally an empty one too) arriving mid-transfer must not wedge that path.
void large_datagram_transfer_under_foreign_traffic(bool with_empty_datagram) {
  constexpr std::uint16_t kReceiver = 0;
  constexpr std::uint16_t kSender = 1;
  // (65536 - 28 - 40) / 4, capped so the datagram fits the largest UDP payload.
  constexpr std::size_t kStride = (65507 - wire::kDataHeaderBytes) / wire::kFloatBytes;
  const std::uint64_t token = random_job_token();
  const auto values = make_values(4u << 20, 21);
  auto buffer = make_sentinel_buffer(values.size());  // declared first: outlives the transports
  UdpSocketInfo data_socket;
  std::vector<std::unique_ptr<Transport>> world;
  TransportOptions receiver_options = test_options(kReceiver, 2, token);
  receiver_options.paths = 1;
  receiver_options.mtu = 0;
  world.push_back(create_and_find_data_socket(receiver_options, data_socket));
  ASSERT_FALSE(::testing::Test::HasFailure());
  TransportOptions sender_options = test_options(kSender, 2, token);
  sender_options.mtu = 0;
  // 16 MB at 80 MB/s: ~200 ms, so the foreign datagrams land in the middle of the transfer.
  sender_options.rate.min_rate = 1e6;
  sender_options.rate.initial_rate = 80e6;
  sender_options.rate.max_rate = 80e6;
  world.push_back(Transport::create(sender_options));
  connect_all(world);
  Transport& receiver = *world[kReceiver];
  Transport& sender = *world[kSender];

  const auto total = static_cast<std::uint32_t>(values.size());
  auto got = receiver.recv(kSender, 1, buffer, {.deadline = 5s});
  (void)receiver.counters();
  auto sent = sender.send(kReceiver, 1, values, {.deadline = 5s});
  ASSERT_TRUE(eventually([&] { return receiver.counters().datagrams_received >= 16; }, 10s));
  ASSERT_FALSE(ready_within(got, 0ms)) << "transfer finished before the foreign datagrams";

  Injector inject(data_socket.port);
  ASSERT_TRUE(inject.ok());
  std::map<std::string, std::uint64_t> injected;
  std::mt19937_64 rng(99);
  auto garbage = [&](std::size_t size, std::byte first) {
    std::vector<std::byte> bytes(size);
    for (auto& b : bytes) b = static_cast<std::byte>(rng());
    if (!bytes.empty()) bytes[0] = first;
    return bytes;
  };
  wire::DataHeader other_job = valid_header(token ^ 0x77, kSender, kReceiver, 1, total, 0, kStride);
  const auto other_job_packet = data_packet(other_job, packet_values(values, 0, kStride));
  const auto duplicate = data_packet(valid_header(token, kSender, kReceiver, 1, total, 0, kStride),
                                     packet_values(values, 0, kStride));
  for (int round = 0; round < 4; ++round) {
    if (with_empty_datagram) {
      inject.send({});
      ++injected[name(RejectReason::kTooShort)];
    }
    inject.send(garbage(17, std::byte{1}));
    ++injected[name(RejectReason::kTooShort)];
    inject.send(garbage(60'000, std::byte{0xEE}));
    ++injected[name(RejectReason::kBadVersion)];
    inject.send(other_job_packet);
    ++injected[name(RejectReason::kWrongJob)];
    inject.send(duplicate);  // packet 0 arrived long ago
    ++injected[name(RejectReason::kDuplicate)];
    std::this_thread::sleep_for(5ms);
  }

  ASSERT_TRUE(ready_within(got, 7s)) << "the receive never settled";
  MessageResult result;
  try {
    result = got.get();
  } catch (const Error& e) {
    FAIL() << "the transfer failed after foreign datagrams: " << e.what();
  }
  EXPECT_EQ(result.stats.completion, Completion::kComplete);
  expect_delivery_matches(values, buffer, result);
  ASSERT_TRUE(ready_within(sent, 10s));
  EXPECT_EQ(inject.failures(), 0);

  const TransportCounters counters = receiver.counters();
  const auto socket_now = udp_socket(data_socket.inode);
  ASSERT_TRUE(socket_now.has_value());
  const std::uint64_t kernel_drops = socket_now->drops - data_socket.drops;
  for (const RejectReason reason :
       {RejectReason::kTooShort, RejectReason::kBadVersion, RejectReason::kWrongJob}) {
    EXPECT_LE(reject_count(counters, name(reason)), injected[name(reason)]) << name(reason);
    EXPECT_GE(reject_count(counters, name(reason)) + kernel_drops, injected[name(reason)])
        << name(reason);
  }
  EXPECT_GE(reject_count(counters, name(RejectReason::kDuplicate)) + kernel_drops,
            injected[name(RejectReason::kDuplicate)]);
}

TEST(Hostile, LargeDatagramTransferSurvivesForeignDatagrams) {
  large_datagram_transfer_under_foreign_traffic(false);
}

TEST(Hostile, LargeDatagramTransferSurvivesAnEmptyDatagram) {
  large_datagram_transfer_under_foreign_traffic(true);
}

}  // namespace
}  // namespace dlcp::test
