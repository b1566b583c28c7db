// What all-reduce does to a rank's input before the algorithm runs: rounding to a 16-bit wire,
// with and without error feedback, and the rotation's round trip.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "collectives/value_transform.hpp"
#include "wire/values.hpp"

namespace dlcp::collectives {
namespace {

constexpr std::size_t kBlock = 64;

std::vector<float> gradient(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1e-3f);
  std::vector<float> values(n);
  for (float& v : values) v = normal(rng);
  return values;
}

TEST(ValueTransform, Float32LeavesTheInputAlone) {
  auto values = gradient(1000, 1);
  const auto before = values;
  prepare_allreduce_input(values, {}, kBlock);
  finish_allreduce_output(values, {});
  EXPECT_EQ(values, before);
}

TEST(ValueTransform, SixteenBitsRoundsAsTheWireWould) {
  for (const WireDtype dtype : {WireDtype::kBfloat16, WireDtype::kFloat16}) {
    auto values = gradient(1000, 2);
    auto expected = values;
    wire::round_to_wire(expected, dtype, kBlock);
    prepare_allreduce_input(values, {.wire = dtype}, kBlock);
    EXPECT_EQ(values, expected) << to_string(dtype);
  }
}

// The residual carries each step's rounding error into the next: over T steps of the same
// gradient, what was sent adds up to T times the gradient less the last residual, so the error
// stays bounded instead of growing with T.
TEST(ValueTransform, ErrorFeedbackKeepsTheSentSumWithinOneRounding) {
  constexpr int kSteps = 50;
  const auto grad = gradient(1000, 3);
  std::vector<float> residual(grad.size(), 0.0f);
  std::vector<double> sent_with(grad.size(), 0.0);
  std::vector<double> sent_without(grad.size(), 0.0);
  for (int step = 0; step < kSteps; ++step) {
    const auto owed = [&] {
      std::vector<float> o(grad.size());
      for (std::size_t i = 0; i < grad.size(); ++i) o[i] = grad[i] + residual[i];
      return o;
    }();
    auto with = grad;
    prepare_allreduce_input(with, {.wire = WireDtype::kBfloat16, .error_feedback = residual},
                            kBlock);
    auto without = grad;
    prepare_allreduce_input(without, {.wire = WireDtype::kBfloat16}, kBlock);
    for (std::size_t i = 0; i < grad.size(); ++i) {
      // What is sent plus what is kept is exactly what was owed.
      ASSERT_EQ(with[i] + residual[i], owed[i]) << "step " << step << " entry " << i;
      sent_with[i] += with[i];
      sent_without[i] += without[i];
    }
  }
  double error_with = 0;
  double error_without = 0;
  for (std::size_t i = 0; i < grad.size(); ++i) {
    const double owed = double{grad[i]} * kSteps;
    // Exact up to float32 accumulation: the residual is the gap.
    ASSERT_NEAR(sent_with[i] + residual[i], owed, 1e-9 + 1e-6 * std::abs(owed)) << i;
    error_with = std::max(error_with, std::abs(sent_with[i] - owed));
    error_without = std::max(error_without, std::abs(sent_without[i] - owed));
  }
  // Without feedback the same rounding error repeats every step.
  EXPECT_LT(error_with * 10, error_without);
}

TEST(ValueTransform, ANonFiniteInputDoesNotPoisonTheResidual) {
  std::vector<float> values{1.0f, INFINITY, NAN, -2.5e-3f};
  std::vector<float> residual(values.size(), 0.0f);
  prepare_allreduce_input(values, {.wire = WireDtype::kFloat16, .error_feedback = residual},
                          kBlock);
  for (const float r : residual) EXPECT_TRUE(std::isfinite(r)) << r;
}

// Reduce-scatter: a copy, each shard rounded from its own start (fp16's scale is per packet) with
// its own slice of the residual; the input is left alone.
TEST(ValueTransform, ReduceScatterRoundsACopyShardByShard) {
  constexpr std::size_t kShard = 100;  // not a multiple of the block
  const auto input = gradient(3 * kShard, 5);
  std::vector<float> copy(input.size());
  std::vector<float> residual(input.size(), 0.0f);
  prepare_reduce_scatter_input(input, copy, kShard,
                               {.wire = WireDtype::kFloat16, .error_feedback = residual}, kBlock);
  EXPECT_EQ(input, gradient(3 * kShard, 5));
  for (std::size_t shard = 0; shard < 3; ++shard) {
    std::vector<float> expected(input.begin() + static_cast<std::ptrdiff_t>(shard * kShard),
                                input.begin() + static_cast<std::ptrdiff_t>((shard + 1) * kShard));
    wire::round_to_wire(expected, WireDtype::kFloat16, kBlock);
    for (std::size_t i = 0; i < kShard; ++i) {
      const std::size_t at = shard * kShard + i;
      ASSERT_EQ(copy[at], expected[i]) << at;
      ASSERT_EQ(residual[at], input[at] - expected[i]) << at;
    }
  }
}

TEST(ValueTransform, RotationRoundTrips) {
  auto values = gradient(40'000, 4);
  const auto before = values;
  const CollectiveOptions options{.hadamard_rotation = true};
  prepare_allreduce_input(values, options, kBlock);
  EXPECT_NE(values, before);
  finish_allreduce_output(values, options);
  for (std::size_t i = 0; i < values.size(); ++i) ASSERT_NEAR(values[i], before[i], 1e-8) << i;
}

}  // namespace
}  // namespace dlcp::collectives
