// Helpers for collective tests: N ranks of a Communicator as threads over one in-process store,
// inputs whose sums are exact in float, and comparisons.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "dlcp/communicator.hpp"
#include "transport_fixture.hpp"

namespace dlcp::test {

inline CommunicatorOptions communicator_options(Algorithm algorithm, int servers = 0) {
  CommunicatorOptions options;
  options.transport = test_options(0, 1, 0);
  options.transport.job_token = 0;  // agreed through the store
  options.algorithm = algorithm;
  options.servers = servers;
  options.segment_bytes = 64 << 10;  // many segments even for small test buffers
  static std::atomic<int> unique{0};
  options.store_prefix = "test" + std::to_string(unique.fetch_add(1));
  return options;
}

// Runs fn(communicator) for every rank of a world of `world_size` (servers included: server ranks
// run serve()) on its own thread, all sharing one store; rethrows the first failure.
inline void run_communicators(int world_size, const CommunicatorOptions& options,
                              const std::function<void(Communicator&)>& worker,
                              const std::function<void(TransportOptions&, int)>& customize = {}) {
  HashStore store;
  store.set_timeout(std::chrono::seconds(20));
  run_per_rank(world_size, [&](int rank) {
    CommunicatorOptions mine = options;
    if (customize) customize(mine.transport, rank);
    auto comm = Communicator::create(store, rank, world_size, mine);
    if (comm->is_server()) {
      comm->serve();
    } else {
      worker(*comm);
    }
  });
}

// Integer-valued inputs: every partial sum is exact in float, in any order.
inline std::vector<float> exact_input(std::size_t n, int rank, int iteration = 0) {
  std::vector<float> values(n);
  for (std::size_t i = 0; i < n; ++i) {
    values[i] = static_cast<float>((static_cast<int>(i % 101) - 50) * (rank + 1) + iteration);
  }
  return values;
}

inline std::vector<float> exact_sum(std::size_t n, int world, int iteration = 0) {
  std::vector<float> sum(n, 0.0f);
  for (int r = 0; r < world; ++r) {
    const auto input = exact_input(n, r, iteration);
    for (std::size_t i = 0; i < n; ++i) sum[i] += input[i];
  }
  return sum;
}

// `call` throws Error(kInvalidArgument) whose message contains `words`.
inline void expect_refused(const std::function<void()>& call, const std::string& words) {
  try {
    call();
    ADD_FAILURE() << "accepted: " << words;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
  }
}

inline bool bit_equal(const std::vector<float>& a, const std::vector<float>& b) {
  // memcmp's pointers must not be null, even for 0 bytes (an empty vector's data() may be).
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

// Whether a lossy collective's result is biased, told apart from noise: the mean of per-block
// errors (one sample per block, the unit of loss) and its standard error.
struct BiasEstimate {
  double mean = 0;
  double standard_error = 0;
  std::size_t samples = 0;
};

inline BiasEstimate estimate_bias(const std::vector<double>& block_errors) {
  BiasEstimate estimate;
  estimate.samples = block_errors.size();
  if (block_errors.size() < 2) return estimate;
  for (const double e : block_errors) estimate.mean += e;
  estimate.mean /= static_cast<double>(block_errors.size());
  double variance = 0;
  for (const double e : block_errors) variance += (e - estimate.mean) * (e - estimate.mean);
  variance /= static_cast<double>(block_errors.size() - 1);
  estimate.standard_error = std::sqrt(variance / static_cast<double>(block_errors.size()));
  return estimate;
}

}  // namespace dlcp::test
