// Helpers for the loopback integration tests: build a small world of dlcp Transports on
// 127.0.0.1 with a random job token and connect every pair (the higher rank of each pair dials,
// the lower waits, so every rank connects from its own thread), plus payload generators and
// bit-exact checks of what arrived.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "dlcp/error.hpp"
#include "dlcp/options.hpp"
#include "dlcp/transport.hpp"

namespace dlcp::test {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

inline constexpr const char* kLoopback = "127.0.0.1";
// Most tests use a small MTU so that even modest messages are cut into many packets.
inline constexpr int kTestMtu = 1500;
// Floats per data packet at kTestMtu: (MTU - IPv4/UDP headers - dlcp header) / 4.
inline constexpr std::size_t kTestStride = (kTestMtu - 28 - 40) / 4;
// A quiet NaN with a payload no generated value has: marks "never written by the transport".
inline constexpr std::uint32_t kSentinelBits = 0x7FC0DEADu;

inline std::uint64_t random_job_token() {
  std::random_device device;
  std::uint64_t token = 0;
  while (token == 0) {
    token = (std::uint64_t{device()} << 32) ^ std::uint64_t{device()};
  }
  return token;
}

// Options every test starts from: loopback, ephemeral ports, a small MTU, a short connect
// timeout (all peers are local), small socket buffers (32 MiB each would add up quickly) and the
// UDP path.
inline TransportOptions test_options(int rank, int world_size, std::uint64_t job_token) {
  TransportOptions options;
  options.rank = rank;
  options.world_size = world_size;
  options.job_token = job_token;
  options.bind_host = kLoopback;
  options.paths = 2;
  options.mtu = kTestMtu;
  options.socket_buffer_bytes = 4 << 20;
  options.connect_timeout = 10s;
  // These tests exercise the UDP path between transports of one process; local_path_test.cpp
  // turns the local path on where it is the subject.
  options.local_path = false;
  return options;
}

using Customize = std::function<void(TransportOptions&)>;

// Runs fn(rank) on one thread per rank and rethrows the first exception, if any.
inline void run_per_rank(int world_size, const std::function<void(int)>& fn) {
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(world_size));
  std::vector<std::thread> threads;
  threads.reserve(errors.size());
  for (int rank = 0; rank < world_size; ++rank) {
    threads.emplace_back([&, rank] {
      try {
        fn(rank);
      } catch (...) {
        errors[static_cast<std::size_t>(rank)] = std::current_exception();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (const auto& error : errors) {
    if (error) std::rethrow_exception(error);
  }
}

// Connects every pair of an already created world; each rank connects from its own thread.
inline void connect_all(const std::vector<std::unique_ptr<Transport>>& world) {
  const int size = static_cast<int>(world.size());
  run_per_rank(size, [&](int rank) {
    for (int peer = 0; peer < size; ++peer) {
      if (peer == rank) continue;
      world[static_cast<std::size_t>(rank)]->connect(
          peer, kLoopback, world[static_cast<std::size_t>(peer)]->control_port());
    }
  });
}

// Creates world_size transports sharing a fresh random job token and connects every pair.
// customize(options) runs for each rank after the defaults are set (options.rank tells which).
inline std::vector<std::unique_ptr<Transport>> make_world(int world_size,
                                                          const Customize& customize = {}) {
  const std::uint64_t token = random_job_token();
  std::vector<std::unique_ptr<Transport>> world;
  for (int rank = 0; rank < world_size; ++rank) {
    TransportOptions options = test_options(rank, world_size, token);
    if (customize) customize(options);
    world.push_back(Transport::create(options));
  }
  connect_all(world);
  return world;
}

// Gradient-like values: normally distributed with a per-block scale so packets differ in
// magnitude (the protected/drop-eligible split depends on it). Never NaN, never the sentinel.
inline std::vector<float> make_values(std::size_t count, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> scale(0.01f, 10.0f);
  std::vector<float> values(count);
  float block_scale = 1.0f;
  for (std::size_t i = 0; i < count; ++i) {
    if (i % 97 == 0) block_scale = scale(rng);
    values[i] = normal(rng) * block_scale;
  }
  return values;
}

inline std::vector<float> make_sentinel_buffer(std::size_t count) {
  std::vector<float> buffer(count);
  for (auto& value : buffer) std::memcpy(&value, &kSentinelBits, sizeof(value));
  return buffer;
}

inline bool is_sentinel(float value) {
  std::uint32_t bits = 0;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits == kSentinelBits;
}

// Index of the first entry in [first, first + count) whose bits differ between a and b, or -1.
inline std::int64_t first_bit_difference(std::span<const float> a, std::span<const float> b,
                                         std::size_t first, std::size_t count) {
  if (count == 0 || std::memcmp(a.data() + first, b.data() + first, count * sizeof(float)) == 0) {
    return -1;
  }
  for (std::size_t i = first; i < first + count; ++i) {
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0) return static_cast<std::int64_t>(i);
  }
  return -1;
}

// Checks a settled receive against what was sent: entries outside result.missing are
// bit-exact, entries inside still hold the sentinel, the ranges are sorted, disjoint, within the
// message and add up to stats.entries_missing.
inline void expect_delivery_matches(std::span<const float> sent, std::span<const float> received,
                                    const MessageResult& result) {
  ASSERT_EQ(sent.size(), received.size());
  std::uint64_t missing_sum = 0;
  std::uint64_t cursor = 0;  // end of the previous missing range
  for (const MissingRange& range : result.missing) {
    ASSERT_GT(range.count, 0u) << "empty missing range at " << range.first;
    ASSERT_GE(range.first, cursor) << "missing ranges unsorted or overlapping";
    ASSERT_LE(range.first + range.count, sent.size()) << "missing range beyond the message";
    const std::int64_t bad = first_bit_difference(sent, received, static_cast<std::size_t>(cursor),
                                                  static_cast<std::size_t>(range.first - cursor));
    ASSERT_EQ(bad, -1) << "entry " << bad << " arrived but is not bit-exact";
    for (std::uint64_t i = range.first; i < range.first + range.count; ++i) {
      ASSERT_TRUE(is_sentinel(received[static_cast<std::size_t>(i)]))
          << "entry " << i << " is listed missing but was written";
    }
    missing_sum += range.count;
    cursor = range.first + range.count;
  }
  const std::int64_t bad = first_bit_difference(sent, received, static_cast<std::size_t>(cursor),
                                                static_cast<std::size_t>(sent.size() - cursor));
  ASSERT_EQ(bad, -1) << "entry " << bad << " arrived but is not bit-exact";
  EXPECT_EQ(missing_sum, result.stats.entries_missing);
}

// Waits for a future with a bound; true when it became ready.
template <typename T>
bool ready_within(std::future<T>& future, Clock::duration limit) {
  return future.wait_for(limit) == std::future_status::ready;
}

// Polls predicate every millisecond until it holds or the limit passes.
inline bool eventually(const std::function<bool()>& predicate, Clock::duration limit) {
  const auto until = Clock::now() + limit;
  while (Clock::now() < until) {
    if (predicate()) return true;
    std::this_thread::sleep_for(1ms);
  }
  return predicate();
}

inline std::uint64_t reject_count(const TransportCounters& counters, std::string_view reason) {
  for (const auto& [name, count] : counters.rejected_by_reason) {
    if (name == reason) return count;
  }
  return 0;
}

// For EXPECT_TRUE(mentions(error.what(), "rank 0")): says what the text was when it fails.
inline ::testing::AssertionResult mentions(std::string_view text, std::string_view needle) {
  if (text.find(needle) != std::string_view::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "\"" << text << "\" does not mention \"" << needle << "\"";
}

inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace dlcp::test
