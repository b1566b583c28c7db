// Collectives under injected loss: replicas stay bit-identical, protected data is never lost,
// and unbiased aggregation has zero mean error where zero-fill is visibly biased.
#include <cmath>
#include <cstdio>
#include <mutex>
#include <random>

#include "collectives_fixture.hpp"

namespace dlcp::test {
namespace {

// Runs `iterations` all-reduces of `inputs(rank, iteration)` on every rank and returns each
// rank's results, iteration by iteration.
using Inputs = std::function<std::vector<float>(int rank, int iteration)>;
std::vector<std::vector<std::vector<float>>> run_lossy(
    int workers, int servers, Algorithm algorithm, int iterations, const Inputs& inputs,
    const CollectiveOptions& collective, double drop, double burst, double protected_share,
    std::vector<double>* delivered = nullptr) {
  std::vector<std::vector<std::vector<float>>> results(static_cast<std::size_t>(workers));
  std::mutex mutex;
  auto options = communicator_options(algorithm, servers);
  run_communicators(
      workers + servers, options,
      [&](Communicator& comm) {
        for (int it = 0; it < iterations; ++it) {
          auto values = inputs(comm.rank(), it);
          const auto result = comm.allreduce(values, collective).wait();
          std::lock_guard lock(mutex);
          results[static_cast<std::size_t>(comm.rank())].push_back(values);
          if (delivered != nullptr && result.contributions_expected > 0) {
            delivered->push_back(result.delivered_fraction);
          }
        }
      },
      [&](TransportOptions& transport, int rank) {
        transport.inject.drop_rate = drop;
        transport.inject.mean_burst_length = burst;
        transport.inject.seed = 1000 + static_cast<std::uint64_t>(rank);
        transport.policy.protected_share = protected_share;
      });
  return results;
}

struct LossCase {
  Algorithm algorithm;
  int servers;
  double burst;
};

class LossyAllreduce : public testing::TestWithParam<LossCase> {};

std::string loss_case_name(const testing::TestParamInfo<LossCase>& param_info) {
  return std::string(to_string(param_info.param.algorithm)) + "_burst" +
         std::to_string(static_cast<int>(param_info.param.burst));
}

TEST_P(LossyAllreduce, ReplicasAreBitIdenticalAndErrorsStayInLostBlocks) {
  const LossCase c = GetParam();
  constexpr int kWorkers = 4;
  constexpr std::size_t kSize = 60'000;
  CollectiveOptions collective;
  collective.loss_budget = 0.1;
  std::vector<double> delivered;
  const auto results = run_lossy(
      kWorkers, c.servers, c.algorithm, 3,
      [](int rank, int it) { return exact_input(kSize, rank, it); }, collective, 0.05, c.burst, 0.5,
      &delivered);
  for (int it = 0; it < 3; ++it) {
    const auto& reference = results[0][static_cast<std::size_t>(it)];
    for (int r = 1; r < kWorkers; ++r) {
      EXPECT_TRUE(
          bit_equal(results[static_cast<std::size_t>(r)][static_cast<std::size_t>(it)], reference))
          << "rank " << r << " iteration " << it;
    }
    const auto exact = exact_sum(kSize, kWorkers, it);
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < kSize; ++i) {
      ASSERT_TRUE(std::isfinite(reference[i])) << i;
      if (reference[i] != exact[i]) ++wrong;
    }
    // Each transfer may miss at most 10% of its entries; several hops may lose different blocks.
    EXPECT_LT(static_cast<double>(wrong) / kSize, 0.35) << "iteration " << it;
  }
  double lowest = 1.0;
  for (const double d : delivered) lowest = std::min(lowest, d);
  EXPECT_GE(lowest, 0.75);
  EXPECT_LE(lowest, 1.0);
}

INSTANTIATE_TEST_SUITE_P(Algorithms, LossyAllreduce,
                         testing::Values(LossCase{Algorithm::kRing, 0, 1.0},
                                         LossCase{Algorithm::kTranspose, 0, 1.0},
                                         LossCase{Algorithm::kTranspose, 0, 4.0},
                                         LossCase{Algorithm::kParameterServer, 2, 1.0}),
                         loss_case_name);

// One worker's packets are lost on the way to everyone at 30%, three times the budget: the
// contributions to each reduced segment share their budget (MessageOptions::budget_group), so
// its owners settle without that worker's lost tail when the others arrived whole, and every
// replica still ends bit-identical.
class LateContribution : public testing::TestWithParam<LossCase> {};

TEST_P(LateContribution, SettlesWithinTheGroupsBudgetAndReplicasAgree) {
  const LossCase c = GetParam();
  constexpr int kWorkers = 4;
  constexpr int kLossy = 3;
  constexpr std::size_t kSize = 60'000;
  constexpr int kIterations = 3;
  CollectiveOptions collective;
  collective.loss_budget = 0.1;
  const int world = kWorkers + c.servers;
  auto options = communicator_options(c.algorithm, c.servers);
  std::vector<std::vector<std::vector<float>>> results(kWorkers);
  std::vector<double> delivered;
  std::uint64_t by_group = 0;
  std::mutex mutex;
  HashStore store;
  store.set_timeout(std::chrono::seconds(20));
  run_per_rank(world, [&](int rank) {
    CommunicatorOptions mine = options;
    if (rank != kLossy) {
      mine.transport.inject.source_drop_rate.assign(static_cast<std::size_t>(world), -1.0);
      mine.transport.inject.source_drop_rate[kLossy] = 0.3;
      mine.transport.inject.seed = 500 + static_cast<std::uint64_t>(rank);
    }
    mine.transport.policy.protected_share = 0.0;  // only the budget decides what may be lost
    auto comm = Communicator::create(store, rank, world, mine);
    if (comm->is_server()) {
      comm->serve();
    } else {
      for (int it = 0; it < kIterations; ++it) {
        auto values = exact_input(kSize, comm->rank(), it);
        const auto result = comm->allreduce(values, collective).wait();
        std::lock_guard lock(mutex);
        results[static_cast<std::size_t>(comm->rank())].push_back(values);
        if (result.contributions_expected > 0) delivered.push_back(result.delivered_fraction);
      }
    }
    std::lock_guard lock(mutex);
    by_group += comm->counters().settled_by_group;
  });
  for (int it = 0; it < kIterations; ++it) {
    for (int r = 1; r < kWorkers; ++r) {
      EXPECT_TRUE(bit_equal(results[static_cast<std::size_t>(r)][static_cast<std::size_t>(it)],
                            results[0][static_cast<std::size_t>(it)]))
          << "rank " << r << " iteration " << it;
    }
  }
  EXPECT_GT(by_group, 0u) << "no contribution was settled on its group's budget";
  // A group of n contributions may miss a tenth of n segments' entries, out of the n (plus the
  // owner's own, which never travels) that the owner reduces.
  for (const double d : delivered) EXPECT_GE(d, 0.9);
}

INSTANTIATE_TEST_SUITE_P(Algorithms, LateContribution,
                         testing::Values(LossCase{Algorithm::kTranspose, 0, 1.0},
                                         LossCase{Algorithm::kParameterServer, 2, 1.0}),
                         loss_case_name);

TEST(LossyAllreduce, ReliableUnderHeavyLossIsExact) {
  CollectiveOptions reliable;
  const auto results = run_lossy(
      3, 0, Algorithm::kRing, 2, [](int rank, int it) { return exact_input(30'000, rank, it); },
      reliable, 0.3, 1.0, 0.5);
  for (int r = 0; r < 3; ++r) {
    for (int it = 0; it < 2; ++it) {
      EXPECT_TRUE(bit_equal(results[static_cast<std::size_t>(r)][static_cast<std::size_t>(it)],
                            exact_sum(30'000, 3, it)));
    }
  }
}

// Mean error of the average against the exact average, over many trials of i.i.d. inputs with a
// non-zero mean (as gradients of data-parallel workers are), with one sample per block (the unit
// of loss). Loss is independent of the values: every packet is drop-eligible.
BiasEstimate bias_of(Algorithm algorithm, Aggregation aggregation) {
  constexpr int kWorkers = 4;
  constexpr int kTrials = 12;
  constexpr std::size_t kSize = 40'000;
  constexpr std::size_t kBlock = kTestStride;
  const auto inputs = [](int rank, int it) {
    std::mt19937 rng(static_cast<unsigned>(7919 * it + rank));
    std::normal_distribution<float> noise(1.0f, 1.0f);
    std::vector<float> values(kSize);
    for (auto& v : values) v = noise(rng);
    return values;
  };
  CollectiveOptions collective;
  collective.loss_budget = 0.3;
  collective.op = ReduceOp::kAverage;
  collective.aggregation = aggregation;
  const auto results =
      run_lossy(kWorkers, 0, algorithm, kTrials, inputs, collective, 0.1, 1.0, 0.0);
  std::vector<double> block_errors;
  for (int it = 0; it < kTrials; ++it) {
    std::vector<double> exact(kSize, 0.0);
    for (int r = 0; r < kWorkers; ++r) {
      const auto in = inputs(r, it);
      for (std::size_t i = 0; i < kSize; ++i) exact[i] += in[i] / kWorkers;
    }
    const auto& result = results[0][static_cast<std::size_t>(it)];
    for (std::size_t b = 0; b * kBlock < kSize; ++b) {
      double sum = 0;
      std::size_t n = 0;
      for (std::size_t i = b * kBlock; i < std::min(kSize, (b + 1) * kBlock); ++i, ++n) {
        sum += result[i] - exact[i];
      }
      block_errors.push_back(sum / static_cast<double>(n));
    }
  }
  return estimate_bias(block_errors);
}

TEST(UnbiasedAggregation, MeanErrorIsIndistinguishableFromZero) {
  for (const Algorithm algorithm : {Algorithm::kTranspose, Algorithm::kRing}) {
    const BiasEstimate unbiased = bias_of(algorithm, Aggregation::kUnbiased);
    ASSERT_GT(unbiased.standard_error, 0.0) << "no loss happened: the test would prove nothing";
    EXPECT_LT(std::abs(unbiased.mean), 4 * unbiased.standard_error)
        << to_string(algorithm) << ": mean " << unbiased.mean << " SE " << unbiased.standard_error;
    // The reference system's zero-fill rule, same losses: biased toward zero (inputs average 1).
    const BiasEstimate zero_fill = bias_of(algorithm, Aggregation::kZeroFill);
    std::printf("%s: unbiased mean error %.5f (SE %.5f), zero-fill %.5f (SE %.5f), %zu blocks\n",
                to_string(algorithm), unbiased.mean, unbiased.standard_error, zero_fill.mean,
                zero_fill.standard_error, unbiased.samples);
    EXPECT_LT(zero_fill.mean, -4 * zero_fill.standard_error)
        << to_string(algorithm) << ": zero-fill mean " << zero_fill.mean << " SE "
        << zero_fill.standard_error;
  }
}

}  // namespace
}  // namespace dlcp::test
