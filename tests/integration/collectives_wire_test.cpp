// All-reduce with a 16-bit wire: without loss the result is, bit for bit on every rank, the
// float32 reduction of the 16-bit-rounded inputs (one rounding per block's sum for transpose and
// parameter server; one per hop for the ring, which forwards partial sums), rounded once more.
#include <cmath>
#include <random>

#include "collectives/block_layout.hpp"
#include "collectives_fixture.hpp"
#include "wire/values.hpp"

namespace dlcp::test {
namespace {

constexpr std::size_t kValues = 20'011;  // 28 packets at the test MTU, spread over every rank

// Gradient-like inputs: normals whose scale varies from packet to packet (fp16's scale is per
// packet) over ten orders of magnitude.
std::vector<float> gradient_input(std::size_t n, int rank) {
  std::mt19937 rng(static_cast<unsigned>(1000 + rank));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> values(n);
  for (std::size_t i = 0; i < n; ++i) {
    values[i] = std::ldexp(normal(rng), static_cast<int>((i / 300) % 34) - 30);
  }
  return values;
}

// float32 values per packet at the test MTU; packet MACs take 24 bytes of it.
constexpr std::size_t kMacStride = kTestStride - 6;

std::size_t wire_block(WireDtype dtype, std::size_t stride) {
  return wire::packet_values(dtype, static_cast<std::uint16_t>(stride));
}

float finish(float sum, int world, ReduceOp op) {
  return op == ReduceOp::kAverage ? sum / static_cast<float>(world) : sum;
}

// What every rank must end with, block by block (a block is one packet's values).
std::vector<float> expected_result(Algorithm algorithm, WireDtype dtype, ReduceOp op, int world,
                                   std::size_t stride = kTestStride) {
  const std::size_t block = wire_block(dtype, stride);
  std::vector<std::vector<float>> inputs;
  for (int r = 0; r < world; ++r) {
    inputs.push_back(gradient_input(kValues, r));
    wire::round_to_wire(inputs.back(), dtype, block);
  }
  const auto input_block = [&](int rank, std::size_t begin, std::size_t size) {
    const auto& input = inputs[static_cast<std::size_t>(rank % world)];
    return std::vector<float>(input.begin() + static_cast<std::ptrdiff_t>(begin),
                              input.begin() + static_cast<std::ptrdiff_t>(begin + size));
  };
  std::vector<float> result(kValues);
  for (int part = 0; part < world; ++part) {
    const collectives::Range range = collectives::aligned_part(
        kValues, static_cast<std::size_t>(world), block, static_cast<std::size_t>(part));
    for (std::size_t begin = range.begin; begin < range.end(); begin += block) {
      const std::size_t size = std::min(block, range.end() - begin);
      // Ring: chunk `part` leaves rank `part` and gains a contribution at each hop, travelling
      // rounded. Transpose: owner `part` adds the others from part + 1 on, in float32. One
      // parameter server: rank order.
      const int first = algorithm == Algorithm::kParameterServer ? 0 : part;
      std::vector<float> sum = input_block(first, begin, size);
      for (int hop = 1; hop < world; ++hop) {
        if (algorithm == Algorithm::kRing) wire::round_to_wire(sum, dtype, block);
        const auto next = input_block(first + hop, begin, size);
        for (std::size_t i = 0; i < size; ++i) sum[i] = next[i] + sum[i];
      }
      for (std::size_t i = 0; i < size; ++i) result[begin + i] = finish(sum[i], world, op);
    }
  }
  wire::round_to_wire(result, dtype, block);
  return result;
}

struct WireCase {
  Algorithm algorithm;
  WireDtype dtype;
};

class WireAllreduce : public testing::TestWithParam<WireCase> {};

TEST_P(WireAllreduce, EqualsTheFloat32ReductionOfTheRoundedInputsOnEveryRank) {
  const WireCase c = GetParam();
  constexpr int kWorkers = 3;
  const int servers = c.algorithm == Algorithm::kParameterServer ? 1 : 0;
  std::vector<std::vector<float>> results(kWorkers);
  for (const ReduceOp op : {ReduceOp::kSum, ReduceOp::kAverage}) {
    run_communicators(
        kWorkers + servers, communicator_options(c.algorithm, servers), [&](Communicator& comm) {
          auto values = gradient_input(kValues, comm.rank());
          const auto result = comm.allreduce(values, {.op = op, .wire = c.dtype}).wait();
          EXPECT_DOUBLE_EQ(result.delivered_fraction, 1.0);
          results[static_cast<std::size_t>(comm.rank())] = std::move(values);
        });
    const auto expected = expected_result(c.algorithm, c.dtype, op, kWorkers);
    EXPECT_TRUE(bit_equal(results[0], expected)) << to_string(c.dtype);
    for (int r = 1; r < kWorkers; ++r) {
      EXPECT_TRUE(bit_equal(results[static_cast<std::size_t>(r)], results[0])) << "rank " << r;
    }
  }
}

std::string wire_case_name(const testing::TestParamInfo<WireCase>& info) {
  return std::string(to_string(info.param.algorithm)) + "_" + to_string(info.param.dtype);
}

INSTANTIATE_TEST_SUITE_P(
    AlgorithmsAndDtypes, WireAllreduce,
    testing::Values(WireCase{Algorithm::kRing, WireDtype::kBfloat16},
                    WireCase{Algorithm::kRing, WireDtype::kFloat16},
                    WireCase{Algorithm::kTranspose, WireDtype::kBfloat16},
                    WireCase{Algorithm::kTranspose, WireDtype::kFloat16},
                    WireCase{Algorithm::kParameterServer, WireDtype::kBfloat16},
                    WireCase{Algorithm::kParameterServer, WireDtype::kFloat16}),
    wire_case_name);

// Retransmissions and packet MACs carry 16-bit payloads too: reliable under loss, the result is
// the loss-free one.
TEST(WireAllreduce, RetransmittedAndAuthenticatedPacketsArriveExact) {
  constexpr int kWorkers = 3;
  for (const WireDtype dtype : {WireDtype::kBfloat16, WireDtype::kFloat16}) {
    std::vector<std::vector<float>> results(kWorkers);
    std::vector<std::uint64_t> dropped(kWorkers);
    run_communicators(
        kWorkers, communicator_options(Algorithm::kRing),
        [&](Communicator& comm) {
          auto values = gradient_input(kValues, comm.rank());
          comm.allreduce(values, {.wire = dtype}).wait();
          results[static_cast<std::size_t>(comm.rank())] = std::move(values);
          dropped[static_cast<std::size_t>(comm.rank())] = comm.counters().injected_drops;
        },
        [](TransportOptions& transport, int) {
          transport.inject.drop_rate = 0.05;
          transport.packet_mac = true;
        });
    const auto expected =
        expected_result(Algorithm::kRing, dtype, ReduceOp::kSum, kWorkers, kMacStride);
    for (int r = 0; r < kWorkers; ++r) {
      EXPECT_TRUE(bit_equal(results[static_cast<std::size_t>(r)], expected))
          << to_string(dtype) << " rank " << r;
    }
    EXPECT_GT(dropped[0] + dropped[1] + dropped[2], 0u) << "no packet was lost to recover";
  }
}

// Rotation, 16-bit wire, error feedback and a loss budget together: every rank ends with the
// same result, near the exact one.
TEST(WireAllreduce, RotationAndErrorFeedbackUnderLossKeepRanksIdentical) {
  constexpr int kWorkers = 3;
  std::vector<std::vector<float>> results(kWorkers);
  std::vector<double> delivered(kWorkers);
  run_communicators(
      kWorkers, communicator_options(Algorithm::kTranspose),
      [&](Communicator& comm) {
        std::vector<float> residual(kValues, 0.0f);
        for (int step = 0; step < 3; ++step) {
          auto values = exact_input(kValues, comm.rank(), step);
          const auto result = comm.allreduce(values, {.loss_budget = 0.1,
                                                      .op = ReduceOp::kAverage,
                                                      .wire = WireDtype::kBfloat16,
                                                      .error_feedback = residual,
                                                      .hadamard_rotation = true})
                                  .wait();
          results[static_cast<std::size_t>(comm.rank())] = std::move(values);
          delivered[static_cast<std::size_t>(comm.rank())] = result.delivered_fraction;
        }
        // The residual holds this rank's last rounding error, a small fraction of its input.
        double residual_norm = 0;
        for (const float r : residual) residual_norm += double{r} * r;
        EXPECT_GT(residual_norm, 0.0);
      },
      [](TransportOptions& transport, int) { transport.inject.drop_rate = 0.05; });
  for (int r = 1; r < kWorkers; ++r) {
    EXPECT_TRUE(bit_equal(results[static_cast<std::size_t>(r)], results[0])) << "rank " << r;
  }
  auto exact = exact_sum(kValues, kWorkers, 2);
  double error = 0;
  double norm = 0;
  for (std::size_t i = 0; i < kValues; ++i) {
    exact[i] /= kWorkers;
    error += std::pow(double{results[0][i]} - exact[i], 2);
    norm += std::pow(double{exact[i]}, 2);
  }
  // Lost contributions are averaged out (unbiased), rounding costs about 2^-9: a few percent.
  EXPECT_LT(std::sqrt(error / norm), 0.1);
}

TEST(WireAllreduce, RotationAloneIsNearlyExact) {
  constexpr int kWorkers = 2;
  std::vector<std::vector<float>> results(kWorkers);
  run_communicators(kWorkers, communicator_options(Algorithm::kRing), [&](Communicator& comm) {
    auto values = exact_input(kValues, comm.rank());
    comm.allreduce(values, {.hadamard_rotation = true}).wait();
    results[static_cast<std::size_t>(comm.rank())] = std::move(values);
  });
  EXPECT_TRUE(bit_equal(results[1], results[0]));
  const auto exact = exact_sum(kValues, kWorkers);
  for (std::size_t i = 0; i < kValues; ++i) ASSERT_NEAR(results[0][i], exact[i], 1e-3) << i;
}

TEST(WireAllreduce, OptionsOnlyAllreduceTakesAreRefusedElsewhere) {
  run_communicators(2, communicator_options(Algorithm::kRing), [&](Communicator& comm) {
    std::vector<float> values(100, 1.0f);
    std::vector<float> gathered(200);
    const auto refused = expect_refused;
    refused([&] { comm.broadcast(values, 0, {.wire = WireDtype::kBfloat16}); },
            "apply to reduce_scatter and allreduce only");
    refused([&] { comm.allgather(values, gathered, {.hadamard_rotation = true}); },
            "apply to reduce_scatter and allreduce only");
    std::vector<float> residual(99);
    refused(
        [&] { comm.allreduce(values, {.wire = WireDtype::kFloat16, .error_feedback = residual}); },
        "holds 99 floats for 100 values");
    std::vector<float> full(100);
    refused([&] { comm.allreduce(values, {.error_feedback = full}); }, "needs a 16-bit wire");
    // Nothing was started: the communicator still works.
    comm.allreduce(values, {.wire = WireDtype::kBfloat16}).wait();
    EXPECT_EQ(values[0], 2.0f);
  });
}

}  // namespace
}  // namespace dlcp::test
