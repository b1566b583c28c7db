// Floods while collectives run, at several times the data packet rate: random garbage, packets of
// the right job for messages nobody posted (they fill the early-arrival backlog up to its fixed
// limit, then are refused), and byte-identical duplicates of a transfer's own packets. Results
// must stay exact at budget 0 (and consistent within budget otherwise), the backlog and memory
// bounded, and every refusal counted. Throughput and CPU with and without each flood are printed
// (and recorded as test properties); they are figures, not assertions.
#include <cstdio>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "hardening_fixture.hpp"
#include "wire/byte_order.hpp"
#include "wire/data_header.hpp"

namespace dlcp::test {
namespace {

constexpr int kWorld = 3;
constexpr std::size_t kFloats = 1u << 20;  // 4 MiB per rank and all-reduce
constexpr int kIterations = 3;
// Paced data (bytes/s per peer) keeps the data packet rate modest and known, so that a flood of
// several times that rate is possible on a small machine.
constexpr double kDataRate = 12e6;
constexpr std::size_t kBacklogLimit = 2u << 20;
// Message ids with phase 0xF: no collective uses it, so forged ids never meet a real transfer.
constexpr std::uint64_t kForeignPhase = std::uint64_t{0xF} << 28;

CommunicatorOptions flood_options() {
  CommunicatorOptions options = communicator_options(Algorithm::kRing);
  options.transport.rate.initial_rate = kDataRate;
  options.transport.rate.max_rate = kDataRate;
  options.transport.rate.min_rate = kDataRate / 10;
  options.transport.backlog_bytes = kBacklogLimit;
  options.transport.socket_buffer_bytes = 8 << 20;
  return options;
}

std::uint64_t fingerprint(const std::vector<float>& values) {
  std::uint64_t hash = 1469598103934665603ull;
  const auto* bytes = reinterpret_cast<const unsigned char*>(values.data());
  for (std::size_t i = 0; i < values.size() * sizeof(float); ++i) {
    hash = (hash ^ bytes[i]) * 1099511628211ull;
  }
  return hash;
}

struct RunFigures {
  double seconds = 0;
  std::uint64_t data_packets = 0;
  double io_cpu_seconds = 0;
  bool all_exact = true;       // budget 0: every result equals the exact sum
  bool all_consistent = true;  // every rank ended each all-reduce with the same bits
  double min_delivered = 1.0;
};

// kIterations all-reduces on every rank; iteration numbers start at `first`.
RunFigures run_allreduces(CommunicatorWorld& world, int first, double budget) {
  const TransportCounters before = world.total_counters();
  std::vector<std::vector<std::uint64_t>> prints(kWorld, std::vector<std::uint64_t>(kIterations));
  std::vector<double> delivered(kWorld, 1.0);
  std::vector<int> inexact(kWorld, 0);
  const auto start = Clock::now();
  world.each([&](int rank, Communicator& comm) {
    for (int i = 0; i < kIterations; ++i) {
      auto values = exact_input(kFloats, rank, first + i);
      const CollectiveResult r =
          comm.allreduce(values, {.loss_budget = budget, .deadline = 30s}).wait();
      delivered[rank] = std::min(delivered[rank], r.delivered_fraction);
      prints[rank][i] = fingerprint(values);
      if (budget == 0 && !bit_equal(values, exact_sum(kFloats, kWorld, first + i))) {
        ++inexact[rank];
      }
    }
  });
  RunFigures figures;
  figures.seconds = seconds_since(start);
  const TransportCounters after = world.total_counters();
  figures.data_packets = after.datagrams_sent - before.datagrams_sent;
  figures.io_cpu_seconds = after.io_thread_cpu_seconds - before.io_thread_cpu_seconds;
  for (int rank = 0; rank < kWorld; ++rank) {
    figures.all_exact = figures.all_exact && inexact[rank] == 0;
    figures.all_consistent = figures.all_consistent && prints[rank] == prints[0];
    figures.min_delivered = std::min(figures.min_delivered, delivered[rank]);
  }
  return figures;
}

void report(const char* name, const RunFigures& quiet, const RunFigures& flooded,
            std::uint64_t flood_sent, double flood_seconds) {
  const double data_pps = static_cast<double>(flooded.data_packets) / flooded.seconds;
  const double flood_pps = static_cast<double>(flood_sent) / std::max(flood_seconds, 1e-9);
  const double loss = 1.0 - quiet.seconds / flooded.seconds;
  std::printf(
      "[%s] quiet: %.2f s, %.0f data pkt/s, I/O CPU %.2f s | flooded: %.2f s, %.0f data pkt/s, "
      "%.0f flood pkt/s (%.1fx data), I/O CPU %.2f s | throughput loss %.1f%%\n",
      name, quiet.seconds, static_cast<double>(quiet.data_packets) / quiet.seconds,
      quiet.io_cpu_seconds, flooded.seconds, data_pps, flood_pps, flood_pps / data_pps,
      flooded.io_cpu_seconds, 100 * loss);
  ::testing::Test::RecordProperty("quiet_seconds", std::to_string(quiet.seconds));
  ::testing::Test::RecordProperty("flooded_seconds", std::to_string(flooded.seconds));
  ::testing::Test::RecordProperty("flood_to_data_ratio", std::to_string(flood_pps / data_pps));
  ::testing::Test::RecordProperty("throughput_loss", std::to_string(loss));
}

// Flood datagrams for each rank, prepared before the flood starts.
using Pools = std::vector<std::vector<std::vector<std::byte>>>;
constexpr std::size_t kPoolSize = 4096;

Flooder::Make from(const Pools& pools) {
  return [&pools](std::uint16_t rank, std::uint64_t index) -> const std::vector<std::byte>& {
    const auto& pool = pools[rank];
    return pool[(index / kWorld) % pool.size()];
  };
}

// Random bytes of random length; one in four starts like a real header of this job (version 1,
// the job token), so the decoder has to look past the first fields.
Pools garbage(std::uint64_t token) {
  std::mt19937_64 rng(17);
  Pools pools(kWorld);
  for (auto& pool : pools) {
    for (std::size_t i = 0; i < kPoolSize; ++i) {
      std::vector<std::byte> bytes(rng() % 1473);
      for (auto& b : bytes) b = static_cast<std::byte>(rng());
      if (i % 4 == 0 && bytes.size() >= wire::kDataHeaderBytes) {
        wire::put_u8(bytes, 0, wire::kProtocolVersion);
        wire::put_u8(bytes, 1, 0);
        wire::put_u64(bytes, 4, token);
      }
      pool.push_back(std::move(bytes));
    }
  }
  return pools;
}

// Well-formed full-sized packets of this job, from a connected rank, for messages nobody will
// post (kPoolSize of them, each its own message).
Pools unknown_messages(std::uint64_t token) {
  const auto stride = static_cast<std::uint16_t>(kTestStride);
  const std::vector<float> payload(stride, 1.0f);
  Pools pools(kWorld);
  for (std::uint16_t rank = 0; rank < kWorld; ++rank) {
    for (std::uint64_t i = 0; i < kPoolSize; ++i) {
      wire::DataHeader h;
      h.job_token = token;
      h.src_rank = static_cast<std::uint16_t>((rank + 1) % kWorld);
      h.dst_rank = rank;
      h.message_id = kForeignPhase | (i << 32);
      h.total_floats = 100u * stride;
      h.stride_floats = stride;
      h.seq = static_cast<std::uint32_t>(i % 100);
      pools[rank].push_back(data_packet(h, payload));
    }
  }
  return pools;
}

void flood_during_allreduces(const char* name, bool unknown, double budget, double drop) {
  const std::uint64_t rss_start = resident_bytes();
  CommunicatorWorld world(kWorld, flood_options(), [&](TransportOptions& options, int rank) {
    options.inject.drop_rate = drop;
    options.inject.seed = 100 + static_cast<std::uint64_t>(rank);
  });
  ASSERT_EQ(world.sockets().size(), static_cast<std::size_t>(kWorld));
  for (const auto& rank : world.sockets()) ASSERT_FALSE(rank.data_ports.empty());
  const std::uint64_t token = world.job_token();
  run_allreduces(world, 0, budget);  // warm-up: buffers, pacers, rate controllers
  const RunFigures quiet = run_allreduces(world, 10, budget);
  const std::uint64_t rss_quiet = resident_bytes();
  const double data_pps = static_cast<double>(quiet.data_packets) / quiet.seconds;

  const Pools pools = unknown ? unknown_messages(token) : garbage(token);
  Flooder flood(world.sockets(), 4 * data_pps, from(pools));
  std::this_thread::sleep_for(100ms);  // the flood is under way before the collectives start
  const RunFigures flooded = run_allreduces(world, 20, budget);
  flood.stop();
  const TransportCounters counters = world.total_counters();
  const std::uint64_t rss_flooded = resident_bytes();
  report(name, quiet, flooded, flood.sent(), flood.seconds());
  std::printf(
      "[%s] rejected %llu of %llu flood datagrams; backlog %llu bytes (limit %zu); "
      "RSS %llu -> %llu -> %llu MiB\n",
      name, static_cast<unsigned long long>(counters.rejected),
      static_cast<unsigned long long>(flood.sent()),
      static_cast<unsigned long long>(counters.backlog_bytes), kBacklogLimit,
      static_cast<unsigned long long>(rss_start >> 20),
      static_cast<unsigned long long>(rss_quiet >> 20),
      static_cast<unsigned long long>(rss_flooded >> 20));
  for (const auto& [reason, count] : counters.rejected_by_reason) {
    std::printf("[%s]   %s: %llu\n", name, reason.c_str(), static_cast<unsigned long long>(count));
  }

  EXPECT_GT(flood.sent(), 0u);
  if (budget == 0) {
    EXPECT_TRUE(quiet.all_exact);
    EXPECT_TRUE(flooded.all_exact) << "a flood changed the result of a reliable all-reduce";
  } else {
    EXPECT_GE(flooded.min_delivered, 1.0 - budget);
  }
  EXPECT_TRUE(flooded.all_consistent) << "ranks ended an all-reduce with different results";
  // Every flood datagram the kernel delivered was refused (the data path never mistakes one for
  // data); the kernel may drop some when the receive buffers overflow.
  EXPECT_GT(counters.rejected, flood.sent() / 2);
  EXPECT_LE(counters.rejected, flood.sent() + quiet.data_packets + flooded.data_packets);
  EXPECT_LE(counters.backlog_bytes, kBacklogLimit);
  if (unknown) {
    EXPECT_GT(reject_count(counters, "unknown_message"), 0u) << "the backlog never filled";
  }
  // Memory: the backlog limit per rank plus slack for allocator and kernel noise.
  if (!kSanitized) {
    EXPECT_LT(rss_flooded, rss_quiet + kWorld * kBacklogLimit + (64u << 20));
  }
}

TEST(Flood, GarbageKeepsReliableAllReduceExact) {
  flood_during_allreduces("garbage", false, 0.0, 0.0);
}

TEST(Flood, UnknownMessagesFillOnlyTheBoundedBacklog) {
  flood_during_allreduces("unknown messages", true, 0.0, 0.0);
}

TEST(Flood, GarbageKeepsLossyAllReduceWithinBudget) {
  flood_during_allreduces("garbage, budget 5%, 2% loss", false, 0.05, 0.02);
}

// Byte-identical copies of a running transfer's own packets (what a replaying attacker or a
// duplicating network sends): they are recognised as duplicates and the result stays exact.
TEST(Flood, DuplicatesOfTheTransfersOwnPacketsAreRefused) {
  const auto values = make_values(2u << 20, 31);
  auto buffer = make_sentinel_buffer(values.size());
  const std::uint64_t token = random_job_token();
  UdpSocketInfo data_socket;
  std::vector<std::unique_ptr<Transport>> world;
  TransportOptions receiver = test_options(0, 2, token);
  receiver.paths = 1;
  receiver.socket_buffer_bytes = 8 << 20;
  world.push_back(create_and_find_data_socket(receiver, data_socket));
  TransportOptions sender = test_options(1, 2, token);
  sender.rate.initial_rate = sender.rate.max_rate = kDataRate;
  sender.rate.min_rate = kDataRate / 10;
  world.push_back(Transport::create(sender));
  connect_all(world);

  const auto total = static_cast<std::uint32_t>(values.size());
  const std::uint32_t packets = wire::packet_count(total, static_cast<std::uint16_t>(kTestStride));
  const double data_pps = kDataRate / (kTestStride * 4 + 40);
  auto transfer = [&](std::uint64_t id) {
    auto got = world[0]->recv(1, id, buffer, {.deadline = 60s});
    (void)world[0]->counters();  // posted before the first packet can arrive
    const auto start = Clock::now();
    auto sent = world[1]->send(0, id, values, {.deadline = 60s});
    EXPECT_TRUE(ready_within(got, 60s));
    const double seconds = seconds_since(start);
    expect_delivery_matches(values, buffer, got.get());
    EXPECT_TRUE(ready_within(sent, 10s));
    return seconds;
  };
  const double quiet_seconds = transfer(1);
  const TransportCounters quiet = world[0]->counters();

  // Copies of the first 16 packets of message 2: the first copy of each may beat the real one
  // (identical bytes, harmless); every later one is a duplicate.
  constexpr std::uint32_t kCopied = 16;
  Pools pools(1);
  for (std::uint32_t seq = 0; seq < kCopied; ++seq) {
    pools[0].push_back(
        data_packet(valid_header(token, 1, 0, 2, total, seq), packet_values(values, seq)));
  }
  buffer = make_sentinel_buffer(values.size());
  Flooder flood({RankSockets{0, {data_socket.port}}}, 4 * data_pps,
                [&](std::uint16_t, std::uint64_t index) -> const std::vector<std::byte>& {
                  return pools[0][index % kCopied];
                });
  std::this_thread::sleep_for(50ms);
  const double flooded_seconds = transfer(2);
  flood.stop();
  const TransportCounters counters = world[0]->counters();
  const double cpu_quiet = quiet.io_thread_cpu_seconds;
  const double cpu_flooded = counters.io_thread_cpu_seconds - quiet.io_thread_cpu_seconds;
  std::printf(
      "[duplicates] %u packets: quiet %.2f s (receiver I/O CPU %.2f s); under %.1fx the "
      "data rate of duplicates %.2f s (I/O CPU %.2f s); duplicate %llu, stale %llu\n",
      packets, quiet_seconds, cpu_quiet,
      static_cast<double>(flood.sent()) / flood.seconds() / data_pps, flooded_seconds, cpu_flooded,
      static_cast<unsigned long long>(reject_count(counters, "duplicate")),
      static_cast<unsigned long long>(reject_count(counters, "stale_message")));
  ::testing::Test::RecordProperty("quiet_seconds", std::to_string(quiet_seconds));
  ::testing::Test::RecordProperty("flooded_seconds", std::to_string(flooded_seconds));
  const std::uint64_t refused =
      reject_count(counters, "duplicate") + reject_count(counters, "stale_message");
  EXPECT_GT(refused, flood.sent() / 2) << "duplicates were not recognised";
  EXPECT_EQ(counters.rejected, refused) << "something other than duplicates was refused";
  EXPECT_EQ(counters.backlog_packets, 0u);
}

}  // namespace
}  // namespace dlcp::test
