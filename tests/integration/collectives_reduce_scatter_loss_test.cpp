// Reduce-scatter under injected loss: the loss budget lets contributions go missing, the result
// reports what arrived, unbiased aggregation has zero mean error where zero-fill is visibly
// biased, and the contributions to a segment share their budget (a lossy peer's tail is left out).
#include <cmath>
#include <cstdio>
#include <mutex>
#include <random>

#include "collectives_fixture.hpp"

namespace dlcp::test {
namespace {

constexpr int kWorkers = 4;

struct RankRuns {
  std::vector<std::vector<float>> outputs;  // per iteration
  std::vector<CollectiveResult> results;
  std::uint64_t settled_by_group = 0;
};

using Inputs = std::function<std::vector<float>(int rank, int iteration)>;

// Runs `iterations` reduce-scatters of `inputs(rank, iteration)` (kWorkers x n floats) on every
// rank, each transport customized by `customize`.
std::vector<RankRuns> run_lossy(std::size_t n, int iterations, const Inputs& inputs,
                                const CollectiveOptions& collective,
                                const std::function<void(TransportOptions&, int)>& customize) {
  std::vector<RankRuns> runs(kWorkers);
  run_communicators(
      kWorkers, communicator_options(Algorithm::kRing),
      [&](Communicator& comm) {
        RankRuns& mine = runs[static_cast<std::size_t>(comm.rank())];
        for (int it = 0; it < iterations; ++it) {
          const auto input = inputs(comm.rank(), it);
          std::vector<float> output(n);
          mine.results.push_back(comm.reduce_scatter(input, output, collective).wait());
          mine.outputs.push_back(std::move(output));
        }
        mine.settled_by_group = comm.counters().settled_by_group;
      },
      customize);
  return runs;
}

constexpr std::size_t kBiasShard = 15'000;
constexpr std::size_t kBiasTotal = kBiasShard * kWorkers;

// I.i.d. inputs with a non-zero mean, as data-parallel workers' gradients are.
std::vector<float> noisy_input(int rank, int iteration) {
  std::mt19937 rng(static_cast<unsigned>(7919 * iteration + rank));
  std::normal_distribution<float> noise(1.0f, 1.0f);
  std::vector<float> values(kBiasTotal);
  for (auto& v : values) v = noise(rng);
  return values;
}

struct ShardBias : BiasEstimate {
  double lowest_delivered = 1;
};

// Mean error of every rank's averaged shard against the exact average, one sample per block
// (the unit of loss). Every packet is drop-eligible, so loss is independent of the values.
ShardBias bias_of(Aggregation aggregation) {
  constexpr int kTrials = 8;
  constexpr std::size_t kShard = kBiasShard;
  constexpr std::size_t kTotal = kBiasTotal;
  CollectiveOptions collective;
  collective.loss_budget = 0.3;
  collective.op = ReduceOp::kAverage;
  collective.aggregation = aggregation;
  const auto runs = run_lossy(kShard, kTrials, noisy_input, collective,
                              [](TransportOptions& transport, int rank) {
                                transport.inject.drop_rate = 0.1;
                                transport.inject.seed = 1000 + static_cast<std::uint64_t>(rank);
                                transport.policy.protected_share = 0.0;
                              });
  double lowest_delivered = 1;
  std::vector<double> block_errors;
  for (int it = 0; it < kTrials; ++it) {
    std::vector<double> exact(kTotal, 0.0);
    for (int r = 0; r < kWorkers; ++r) {
      const auto in = noisy_input(r, it);
      for (std::size_t i = 0; i < kTotal; ++i) exact[i] += in[i] / kWorkers;
    }
    for (int r = 0; r < kWorkers; ++r) {
      const auto& run = runs[static_cast<std::size_t>(r)];
      const auto& output = run.outputs[static_cast<std::size_t>(it)];
      const CollectiveResult& result = run.results[static_cast<std::size_t>(it)];
      EXPECT_EQ(result.contributions_expected, kShard * kWorkers);
      EXPECT_DOUBLE_EQ(result.delivered_fraction,
                       static_cast<double>(result.contributions_received) /
                           static_cast<double>(result.contributions_expected));
      lowest_delivered = std::min(lowest_delivered, result.delivered_fraction);
      const std::size_t first = static_cast<std::size_t>(r) * kShard;
      for (std::size_t b = 0; b * kTestStride < kShard; ++b) {
        double sum = 0;
        std::size_t count = 0;
        for (std::size_t i = b * kTestStride; i < std::min(kShard, (b + 1) * kTestStride); ++i) {
          sum += output[i] - exact[first + i];
          ++count;
        }
        block_errors.push_back(sum / static_cast<double>(count));
      }
    }
  }
  return {estimate_bias(block_errors), lowest_delivered};
}

TEST(LossyReduceScatter, UnbiasedMeanErrorAndDeliveredFractionBelowOne) {
  const ShardBias unbiased = bias_of(Aggregation::kUnbiased);
  ASSERT_GT(unbiased.standard_error, 0.0) << "no loss happened: the test would prove nothing";
  EXPECT_LT(unbiased.lowest_delivered, 1.0);
  // Own contributions never travel: at most the budget of the other three goes missing.
  EXPECT_GE(unbiased.lowest_delivered, 0.7);
  EXPECT_LT(std::abs(unbiased.mean), 4 * unbiased.standard_error)
      << "mean " << unbiased.mean << " SE " << unbiased.standard_error;
  // The zero-fill rule on the same losses: biased toward zero (inputs average 1).
  const ShardBias zero_fill = bias_of(Aggregation::kZeroFill);
  std::printf(
      "reduce-scatter: unbiased mean error %.5f (SE %.5f), zero-fill %.5f (SE %.5f), %zu "
      "blocks, lowest delivered %.4f\n",
      unbiased.mean, unbiased.standard_error, zero_fill.mean, zero_fill.standard_error,
      unbiased.samples, unbiased.lowest_delivered);
  EXPECT_LT(zero_fill.mean, -4 * zero_fill.standard_error)
      << "zero-fill mean " << zero_fill.mean << " SE " << zero_fill.standard_error;
}

// One worker's packets are lost on the way to everyone at 30%, three times the budget: the
// contributions to each segment share their budget, so owners settle without that worker's lost
// tail when the others arrived whole.
TEST(LossyReduceScatter, ALossyPeersTailIsLeftOutWithinTheGroupsBudget) {
  constexpr int kLossy = 3;
  constexpr std::size_t kShard = 15'000;
  CollectiveOptions collective;
  collective.loss_budget = 0.1;
  const auto runs = run_lossy(
      kShard, 3, [](int rank, int it) { return exact_input(kShard * kWorkers, rank, it); },
      collective,
      [](TransportOptions& transport, int rank) {
        if (rank != kLossy) {
          transport.inject.source_drop_rate.assign(kWorkers, -1.0);
          transport.inject.source_drop_rate[kLossy] = 0.3;
          transport.inject.seed = 500 + static_cast<std::uint64_t>(rank);
        }
        transport.policy.protected_share = 0.0;  // only the budget decides what may be lost
      });
  std::uint64_t by_group = 0;
  double lowest = 1;
  for (int r = 0; r < kWorkers; ++r) {
    const auto& run = runs[static_cast<std::size_t>(r)];
    by_group += run.settled_by_group;
    for (const auto& result : run.results) lowest = std::min(lowest, result.delivered_fraction);
    for (const auto& output : run.outputs) {
      for (const float v : output) ASSERT_TRUE(std::isfinite(v));
    }
  }
  EXPECT_GT(by_group, 0u) << "no contribution was settled on its group's budget";
  EXPECT_LT(lowest, 1.0);
  // A group of 3 contributions may miss a tenth of 3 segments' entries, out of the 4 reduced.
  EXPECT_GE(lowest, 0.9);
}

}  // namespace
}  // namespace dlcp::test
