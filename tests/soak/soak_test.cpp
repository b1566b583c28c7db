// The soak: collectives back to back for a bounded time (DLCP_SOAK_SECONDS, default 60; split
// into DLCP_SOAK_EPOCHS, default 4) under random injected loss and a steady stream of hostile
// datagrams, in epochs that alternate plain and MAC-authenticated transports (each epoch builds
// and tears down its own world). Every result is checked. Memory: the heap in use (the
// allocator's own count, free of fragmentation) must be back where it was after the first epoch,
// and the resident size, which allocator caching makes vary by tens of MiB, within a loose bound.
#include <malloc.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "hardening_fixture.hpp"
#include "wire/byte_order.hpp"

namespace dlcp::test {
namespace {

constexpr int kWorld = 3;
constexpr std::size_t kBacklogLimit = 4u << 20;
constexpr double kFloodRate = 20'000;  // hostile datagrams per second, all ranks together

// Resident memory once the allocator has returned what it can.
std::uint64_t resident_trimmed() {
  ::malloc_trim(0);
  return resident_bytes();
}

// Bytes the program holds allocated (small blocks plus mmapped ones).
std::uint64_t heap_in_use() {
  const struct mallinfo2 info = ::mallinfo2();
  return info.uordblks + info.hblkhd;
}

double mib(std::uint64_t bytes) {
  return static_cast<double>(bytes) / (1 << 20);
}

double soak_seconds() {
  const char* value = std::getenv("DLCP_SOAK_SECONDS");
  return value != nullptr ? std::atof(value) : 60.0;
}

struct Totals {
  std::uint64_t collectives = 0;
  std::uint64_t bytes = 0;
  std::uint64_t flood = 0;
  std::uint64_t rejected = 0;
  std::uint64_t injected_drops = 0;
  double io_cpu_seconds = 0;
};

// Hostile datagrams for one rank: random bytes, and well-formed packets of the job for messages
// that are never posted (message ids with phase 0xF, which no collective uses).
std::vector<std::vector<std::byte>> hostile_pool(std::uint64_t token, std::uint16_t rank,
                                                 bool authenticated) {
  std::mt19937_64 rng(rank);
  std::vector<std::vector<std::byte>> pool;
  const auto stride = static_cast<std::uint16_t>(kTestStride);
  const std::vector<float> payload(stride, 2.0f);
  for (std::uint64_t i = 0; i < 1024; ++i) {
    if (i % 2 == 0) {
      std::vector<std::byte> bytes(rng() % 1473);
      for (auto& b : bytes) b = static_cast<std::byte>(rng());
      pool.push_back(std::move(bytes));
      continue;
    }
    wire::DataHeader h;
    h.job_token = token;
    h.src_rank = static_cast<std::uint16_t>((rank + 1) % kWorld);
    h.dst_rank = rank;
    h.message_id = (std::uint64_t{0xF} << 28) | (i << 32);
    h.total_floats = 10u * stride;
    h.stride_floats = stride;
    h.seq = static_cast<std::uint32_t>(i % 10);
    if (authenticated) h.flags = wire::data_flags::kAuthenticated;
    auto bytes = data_packet(h, payload);
    if (authenticated) bytes.resize(bytes.size() + wire::kMacTrailerBytes);  // a zero "MAC"
    pool.push_back(std::move(bytes));
  }
  return pool;
}

void soak_epoch(bool packet_mac, double seconds, std::mt19937_64& rng, Totals& totals) {
  CommunicatorOptions options = communicator_options(Algorithm::kRing);
  options.transport.backlog_bytes = kBacklogLimit;
  options.transport.packet_mac = packet_mac;
  if (packet_mac) options.transport.job_secret.assign(32, 0x42);
  const std::uint64_t seed = rng();
  CommunicatorWorld world(kWorld, options, [&](TransportOptions& transport, int rank) {
    std::mt19937_64 local(seed + static_cast<std::uint64_t>(rank));
    transport.inject.drop_rate = std::uniform_real_distribution<double>(0.0, 0.03)(local);
    transport.inject.mean_burst_length = 8;
    transport.inject.seed = local();
  });
  std::vector<std::vector<std::vector<std::byte>>> pools;
  for (std::uint16_t rank = 0; rank < kWorld; ++rank) {
    pools.push_back(hostile_pool(world.job_token(), rank, packet_mac));
  }
  Flooder flood(world.sockets(), kFloodRate,
                [&](std::uint16_t rank, std::uint64_t index) -> const std::vector<std::byte>& {
                  return pools[rank][(index / kWorld) % pools[rank].size()];
                });
  const TransportCounters before = world.total_counters();
  const auto start = Clock::now();
  int iteration = 0;
  while (seconds_since(start) < seconds) {
    const std::size_t floats = std::size_t{1} << std::uniform_int_distribution<int>(10, 20)(rng);
    const double budget = rng() % 2 == 0 ? 0.0 : 0.02;
    const Algorithm algorithm = rng() % 2 == 0 ? Algorithm::kRing : Algorithm::kTranspose;
    std::vector<std::vector<float>> results(kWorld);
    std::vector<double> delivered(kWorld, 1.0);
    world.each([&](int rank, Communicator& comm) {
      auto values = exact_input(floats, rank, iteration);
      const CollectiveResult r =
          comm.allreduce(values, {.loss_budget = budget, .algorithm = algorithm, .deadline = 30s})
              .wait();
      delivered[rank] = r.delivered_fraction;
      results[rank] = std::move(values);
    });
    const auto exact = exact_sum(floats, kWorld, iteration);
    for (int rank = 0; rank < kWorld; ++rank) {
      if (budget == 0) {
        ASSERT_TRUE(bit_equal(results[rank], exact))
            << "iteration " << iteration << " rank " << rank << ": wrong result";
      } else {
        ASSERT_TRUE(bit_equal(results[rank], results[0]))
            << "iteration " << iteration << " rank " << rank << ": ranks disagree";
        ASSERT_GE(delivered[rank], 1.0 - budget) << "iteration " << iteration;
      }
    }
    ++iteration;
    totals.bytes += floats * sizeof(float) * kWorld;
  }
  flood.stop();
  const TransportCounters after = world.total_counters();
  EXPECT_LE(after.backlog_bytes, kBacklogLimit);
  totals.collectives += static_cast<std::uint64_t>(iteration);
  totals.flood += flood.sent();
  totals.rejected += after.rejected - before.rejected;
  totals.injected_drops += after.injected_drops - before.injected_drops;
  totals.io_cpu_seconds += after.io_thread_cpu_seconds - before.io_thread_cpu_seconds;
  std::printf(
      "  epoch (%s): %d all-reduces in %.1f s, %llu hostile datagrams, %llu rejected, "
      "backlog %llu bytes, heap in use while running %.1f MiB\n",
      packet_mac ? "packet MAC" : "plain", iteration, seconds_since(start),
      static_cast<unsigned long long>(flood.sent()),
      static_cast<unsigned long long>(after.rejected - before.rejected),
      static_cast<unsigned long long>(after.backlog_bytes), mib(heap_in_use()));
  for (const auto& [reason, count] : after.rejected_by_reason) {
    std::printf("    %s: %llu\n", reason.c_str(), static_cast<unsigned long long>(count));
  }
}

TEST(Soak, CollectivesUnderLossAndGarbageStayCorrectAndMemoryStaysFlat) {
  const double total_seconds = soak_seconds();
  const char* epochs_variable = std::getenv("DLCP_SOAK_EPOCHS");
  const int kEpochs = std::max(2, epochs_variable != nullptr ? std::atoi(epochs_variable) : 4);
  std::mt19937_64 rng(2024);
  Totals totals;
  // The first epoch warms up the allocator, the thread stacks and the kernel's socket state;
  // memory is measured after it.
  soak_epoch(false, total_seconds / kEpochs, rng, totals);
  const std::uint64_t rss_after_warmup = resident_trimmed();
  const std::uint64_t heap_after_warmup = heap_in_use();
  std::printf("  after the warm-up epoch: heap in use %.1f MiB, RSS %.1f MiB\n",
              mib(heap_after_warmup), mib(rss_after_warmup));
  for (int epoch = 1; epoch < kEpochs && !HasFatalFailure(); ++epoch) {
    soak_epoch(epoch % 2 == 1, total_seconds / kEpochs, rng, totals);
    std::printf("  after epoch %d: heap in use %.1f MiB, RSS %.1f MiB\n", epoch, mib(heap_in_use()),
                mib(resident_trimmed()));
  }
  const std::uint64_t rss_end = resident_trimmed();
  const std::uint64_t heap_end = heap_in_use();
  std::printf(
      "soak: %llu all-reduces, %.1f GB reduced, %llu hostile datagrams, %llu rejected, "
      "%llu injected drops, I/O CPU %.1f s; heap in use after warm-up %.1f MiB, at end "
      "%.1f MiB; RSS after warm-up %.1f MiB, at end %.1f MiB\n",
      static_cast<unsigned long long>(totals.collectives), static_cast<double>(totals.bytes) / 1e9,
      static_cast<unsigned long long>(totals.flood),
      static_cast<unsigned long long>(totals.rejected),
      static_cast<unsigned long long>(totals.injected_drops), totals.io_cpu_seconds,
      mib(heap_after_warmup), mib(heap_end), mib(rss_after_warmup), mib(rss_end));
  RecordProperty("collectives", std::to_string(totals.collectives));
  RecordProperty("rss_after_warmup_bytes", std::to_string(rss_after_warmup));
  RecordProperty("rss_end_bytes", std::to_string(rss_end));
  RecordProperty("heap_after_warmup_bytes", std::to_string(heap_after_warmup));
  RecordProperty("heap_end_bytes", std::to_string(heap_end));
  EXPECT_GT(totals.collectives, 0u);
  EXPECT_GT(totals.rejected, 0u);
  // Each epoch builds and destroys a world: anything one keeps accumulates here.
  EXPECT_LT(heap_end, heap_after_warmup + (4u << 20));
  if (!kSanitized) {
    EXPECT_LT(rss_end, rss_after_warmup + (64u << 20));
  }
}

}  // namespace
}  // namespace dlcp::test
