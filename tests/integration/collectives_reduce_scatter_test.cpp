// Reduce-scatter without loss: every rank's shard equals, bit for bit, a reference computed here
// (the transpose all-reduce's sums, in its order), and the transpose all-reduce's own shard; a
// 16-bit wire reduces the inputs rounded shard by shard; each rank sends (W-1)/W of its input;
// bad arguments are refused by name.
#include <cmath>
#include <random>

#include "collectives/block_layout.hpp"
#include "collectives_fixture.hpp"
#include "wire/data_header.hpp"
#include "wire/values.hpp"

namespace dlcp::test {
namespace {

// Inexact floats (normals whose scale changes every 300 entries over ten orders of magnitude), so
// the order of the additions shows in the result's bits.
std::vector<float> random_input(std::size_t n, int rank, int iteration = 0) {
  std::mt19937 rng(static_cast<unsigned>(7919 * iteration + 1000 + rank));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> values(n);
  for (std::size_t i = 0; i < n; ++i) {
    values[i] = std::ldexp(normal(rng), static_cast<int>((i / 300) % 34) - 30);
  }
  return values;
}

// Every rank's input rounded to `dtype` shard by shard, each cut into packets of `block` values
// from its own start.
std::vector<std::vector<float>> rounded_inputs(std::vector<std::vector<float>> inputs,
                                               std::size_t n, WireDtype dtype, std::size_t block) {
  for (auto& input : inputs) {
    for (std::size_t begin = 0; n > 0 && begin < input.size(); begin += n) {
      wire::round_to_wire(std::span<float>(input).subspan(begin, n), dtype, block);
    }
  }
  return inputs;
}

// Shard `rank` of the reduction, each entry summed as transpose_allreduce sums it: from the
// entry's owner there (parts of whole `block`s of the whole buffer) on, in rank order.
std::vector<float> expected_shard(const std::vector<std::vector<float>>& inputs, int rank,
                                  std::size_t n, ReduceOp op, std::size_t block) {
  const auto world = inputs.size();
  const std::size_t total = n * world;
  std::vector<float> shard(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t entry = static_cast<std::size_t>(rank) * n + i;
    std::size_t owner = 0;
    while (collectives::aligned_part(total, world, block, owner).end() <= entry) ++owner;
    float sum = inputs[owner][entry];
    for (std::size_t t = 1; t < world; ++t) sum += inputs[(owner + t) % world][entry];
    shard[i] = op == ReduceOp::kAverage ? sum / static_cast<float>(world) : sum;
  }
  return shard;
}

std::vector<std::vector<float>> inputs_of(int world, std::size_t total, int iteration) {
  std::vector<std::vector<float>> inputs;
  for (int r = 0; r < world; ++r) inputs.push_back(random_input(total, r, iteration));
  return inputs;
}

std::span<const float> shard_of(const std::vector<float>& values, int rank, std::size_t n) {
  return std::span<const float>(values).subspan(static_cast<std::size_t>(rank) * n, n);
}

struct WorldCase {
  int workers;
  int servers;
};

class ExactReduceScatter : public testing::TestWithParam<WorldCase> {};

TEST_P(ExactReduceScatter, SumAndAverageEqualTheReferenceBitForBit) {
  const auto [workers, servers] = GetParam();
  // Per shard: nothing, one float, fewer floats than a packet, and sizes that put shard
  // boundaries inside packets.
  const std::vector<std::size_t> shard_sizes = {0, 1, 7, 1000, 100'003};
  run_communicators(
      workers + servers, communicator_options(Algorithm::kRing, servers), [&](Communicator& comm) {
        ASSERT_EQ(comm.size(), workers);
        int iteration = 0;
        for (const std::size_t n : shard_sizes) {
          const std::size_t total = n * static_cast<std::size_t>(workers);
          const auto inputs = inputs_of(workers, total, iteration);
          for (const ReduceOp op : {ReduceOp::kSum, ReduceOp::kAverage}) {
            const auto& input = inputs[static_cast<std::size_t>(comm.rank())];
            std::vector<float> output(n, -1.0f);
            const auto result = comm.reduce_scatter(input, output, {.op = op}).wait();
            EXPECT_TRUE(bit_equal(output, expected_shard(inputs, comm.rank(), n, op, kTestStride)))
                << "n=" << n << " op=" << static_cast<int>(op) << " rank " << comm.rank();
            EXPECT_TRUE(bit_equal(input, inputs[static_cast<std::size_t>(comm.rank())]));
            EXPECT_EQ(result.entries, n);
            EXPECT_EQ(result.contributions_expected, n * static_cast<std::size_t>(workers));
            EXPECT_EQ(result.contributions_received, result.contributions_expected);
            EXPECT_DOUBLE_EQ(result.delivered_fraction, 1.0);
            EXPECT_EQ(result.broadcast_entries_missing, 0u);
          }
          ++iteration;
        }
      });
}

std::string world_case_name(const testing::TestParamInfo<WorldCase>& info) {
  return std::to_string(info.param.workers) + "w" + std::to_string(info.param.servers) + "s";
}

// Parameter-server mode: the workers reduce among themselves, the server stays out.
INSTANTIATE_TEST_SUITE_P(Worlds, ExactReduceScatter,
                         testing::Values(WorldCase{2, 0}, WorldCase{3, 0}, WorldCase{4, 0},
                                         WorldCase{3, 1}),
                         world_case_name);

TEST(ReduceScatter, EqualsTheTransposeAllreducesShardBitForBit) {
  for (const int workers : {3, 4}) {
    run_communicators(workers, communicator_options(Algorithm::kRing), [&](Communicator& comm) {
      int iteration = 0;
      for (const std::size_t n : {std::size_t{1000}, std::size_t{100'003}}) {
        for (const ReduceOp op : {ReduceOp::kSum, ReduceOp::kAverage}) {
          const auto input =
              random_input(n * static_cast<std::size_t>(workers), comm.rank(), ++iteration);
          std::vector<float> output(n);
          comm.reduce_scatter(input, output, {.op = op}).wait();
          auto reduced = input;
          comm.allreduce(reduced, {.op = op, .algorithm = Algorithm::kTranspose}).wait();
          const auto shard = shard_of(reduced, comm.rank(), n);
          EXPECT_TRUE(bit_equal(output, {shard.begin(), shard.end()}))
              << workers << " workers, n=" << n << " op=" << static_cast<int>(op);
        }
      }
    });
  }
}

TEST(ReduceScatter, OutputMayBeTheInputsOwnShard) {
  constexpr int kWorkers = 3;
  constexpr std::size_t kShard = 10'007;
  const auto inputs = inputs_of(kWorkers, kShard * kWorkers, 5);
  run_communicators(kWorkers, communicator_options(Algorithm::kRing), [&](Communicator& comm) {
    auto buffer = inputs[static_cast<std::size_t>(comm.rank())];
    const std::span<float> own =
        std::span<float>(buffer).subspan(static_cast<std::size_t>(comm.rank()) * kShard, kShard);
    comm.reduce_scatter(buffer, own).wait();
    const auto expected = expected_shard(inputs, comm.rank(), kShard, ReduceOp::kSum, kTestStride);
    EXPECT_TRUE(bit_equal({own.begin(), own.end()}, expected));
    // The other shards are left as they were.
    for (int r = 0; r < kWorkers; ++r) {
      if (r == comm.rank()) continue;
      const auto mine = shard_of(buffer, r, kShard);
      const auto before = shard_of(inputs[static_cast<std::size_t>(comm.rank())], r, kShard);
      EXPECT_TRUE(std::equal(mine.begin(), mine.end(), before.begin())) << "shard " << r;
    }
  });
}

TEST(ReduceScatter, SingleRankCopiesTheInputForSumAndAverage) {
  run_communicators(1, communicator_options(Algorithm::kRing), [&](Communicator& comm) {
    const auto input = random_input(1001, 0);
    for (const ReduceOp op : {ReduceOp::kSum, ReduceOp::kAverage}) {
      std::vector<float> output(1001);
      const auto result =
          comm.reduce_scatter(input, output, {.op = op, .wire = WireDtype::kBfloat16}).wait();
      EXPECT_TRUE(bit_equal(output, input));
      EXPECT_DOUBLE_EQ(result.delivered_fraction, 1.0);
    }
  });
}

// 16-bit wire: the float32 reduction (transpose's order) of the inputs rounded shard by shard,
// left in float32.
class WireReduceScatter : public testing::TestWithParam<WireDtype> {};

std::string dtype_name(const testing::TestParamInfo<WireDtype>& param_info) {
  return to_string(param_info.param);
}

TEST_P(WireReduceScatter, ReducesTheInputsRoundedShardByShard) {
  const WireDtype dtype = GetParam();
  constexpr int kWorkers = 3;
  constexpr std::size_t kShard = 20'011;  // shards start inside packets
  const std::size_t block = wire::packet_values(dtype, kTestStride);
  const auto inputs = inputs_of(kWorkers, kShard * kWorkers, 3);
  const auto rounded = rounded_inputs(inputs, kShard, dtype, block);
  for (const ReduceOp op : {ReduceOp::kSum, ReduceOp::kAverage}) {
    run_communicators(kWorkers, communicator_options(Algorithm::kRing), [&](Communicator& comm) {
      const auto& input = inputs[static_cast<std::size_t>(comm.rank())];
      std::vector<float> output(kShard);
      const auto result = comm.reduce_scatter(input, output, {.op = op, .wire = dtype}).wait();
      EXPECT_DOUBLE_EQ(result.delivered_fraction, 1.0);
      EXPECT_TRUE(bit_equal(output, expected_shard(rounded, comm.rank(), kShard, op, block)))
          << to_string(dtype) << " rank " << comm.rank();
      EXPECT_TRUE(bit_equal(input, inputs[static_cast<std::size_t>(comm.rank())]))
          << "the input was written";
    });
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, WireReduceScatter,
                         testing::Values(WireDtype::kBfloat16, WireDtype::kFloat16), dtype_name);

TEST(WireReduceScatter, ErrorFeedbackCarriesEachShardsRoundingError) {
  constexpr int kWorkers = 2;
  constexpr std::size_t kShard = 5'003;
  const std::size_t block = wire::packet_values(WireDtype::kFloat16, kTestStride);
  const auto first = inputs_of(kWorkers, kShard * kWorkers, 1);
  const auto second = inputs_of(kWorkers, kShard * kWorkers, 2);
  const auto first_rounded = rounded_inputs(first, kShard, WireDtype::kFloat16, block);
  run_communicators(kWorkers, communicator_options(Algorithm::kRing), [&](Communicator& comm) {
    const auto rank = static_cast<std::size_t>(comm.rank());
    std::vector<float> residual(kShard * kWorkers, 0.0f);
    std::vector<float> output(kShard);
    const CollectiveOptions options{.wire = WireDtype::kFloat16, .error_feedback = residual};
    comm.reduce_scatter(first[rank], output, options).wait();
    for (std::size_t i = 0; i < residual.size(); ++i) {
      ASSERT_EQ(residual[i], first[rank][i] - first_rounded[rank][i]) << i;
    }
    // The next call sends input + residual, rounded.
    std::vector<std::vector<float>> carried = second;
    for (std::size_t r = 0; r < kWorkers; ++r) {
      for (std::size_t i = 0; i < carried[r].size(); ++i) {
        carried[r][i] += first[r][i] - first_rounded[r][i];
      }
    }
    comm.reduce_scatter(second[rank], output, options).wait();
    const auto expected =
        expected_shard(rounded_inputs(carried, kShard, WireDtype::kFloat16, block), comm.rank(),
                       kShard, ReduceOp::kSum, block);
    EXPECT_TRUE(bit_equal(output, expected));
  });
}

TEST(WireReduceScatter, RotationIsNearlyExact) {
  constexpr int kWorkers = 3;
  constexpr std::size_t kShard = 20'011;
  run_communicators(kWorkers, communicator_options(Algorithm::kRing), [&](Communicator& comm) {
    const auto input = exact_input(kShard * kWorkers, comm.rank());
    std::vector<float> output(kShard);
    comm.reduce_scatter(input, output, {.hadamard_rotation = true}).wait();
    const auto exact = exact_sum(kShard * kWorkers, kWorkers);
    const auto mine = shard_of(exact, comm.rank(), kShard);
    for (std::size_t i = 0; i < kShard; ++i) ASSERT_NEAR(output[i], mine[i], 1e-3) << i;
  });
}

// What this rank put on the wire during one collective in its first pass over each transfer:
// data packets' headers and payloads, less what recovery rounds resent.
struct FirstPass {
  std::uint64_t bytes = 0;
  std::uint64_t datagrams = 0;
  std::uint64_t retransmitted = 0;  // datagrams
};

FirstPass first_pass_during(Communicator& comm, const std::function<void()>& collective) {
  const TransportCounters before = comm.counters();
  collective();
  const TransportCounters after = comm.counters();
  return {(after.bytes_sent - after.bytes_retransmitted) -
              (before.bytes_sent - before.bytes_retransmitted),
          (after.datagrams_sent - after.datagrams_retransmitted) -
              (before.datagrams_sent - before.datagrams_retransmitted),
          after.datagrams_retransmitted - before.datagrams_retransmitted};
}

// Reliable (budget 0) with and without injected loss: exact, and one packet per block of every
// other shard, nothing else, in the first pass; with loss, recovery resends what was lost.
TEST(ReduceScatter, EachRankSendsOnlyTheOtherRanksShards) {
  constexpr std::size_t kShard = 100'003;
  for (const double drop : {0.0, 0.05}) {
    for (const int workers : {3, 4}) {
      const std::size_t total = kShard * static_cast<std::size_t>(workers);
      const auto inputs = inputs_of(workers, total, 0);
      for (const WireDtype dtype :
           {WireDtype::kFloat32, WireDtype::kBfloat16, WireDtype::kFloat16}) {
        const std::size_t block = wire::packet_values(dtype, kTestStride);
        const auto rounded =
            dtype == WireDtype::kFloat32 ? inputs : rounded_inputs(inputs, kShard, dtype, block);
        run_communicators(
            workers, communicator_options(Algorithm::kRing),
            [&](Communicator& comm) {
              std::vector<float> output(kShard);
              comm.barrier();
              const FirstPass sent = first_pass_during(comm, [&] {
                comm.reduce_scatter(inputs[static_cast<std::size_t>(comm.rank())], output,
                                    {.wire = dtype})
                    .wait();
              });
              const std::string what = std::string(to_string(dtype)) + ", " +
                                       std::to_string(workers) + " workers, drop " +
                                       std::to_string(drop);
              EXPECT_TRUE(bit_equal(
                  output, expected_shard(rounded, comm.rank(), kShard, ReduceOp::kSum, block)))
                  << what;
              const auto other_shards = static_cast<std::uint64_t>(workers - 1);
              const std::uint64_t packets = other_shards * collectives::blocks_in(kShard, block);
              const std::uint64_t payload = sent.bytes - sent.datagrams * wire::kDataHeaderBytes;
              const std::uint64_t value_bytes =
                  other_shards * kShard * (dtype == WireDtype::kFloat32 ? sizeof(float) : 2);
              // Each value once (fp16 adds its scale per packet), with headers at most 5% more.
              EXPECT_EQ(sent.datagrams, packets) << what;
              const std::uint64_t scales = dtype == WireDtype::kFloat16 ? 2 * packets : 0;
              EXPECT_EQ(payload, value_bytes + scales) << what;
              EXPECT_LE(static_cast<double>(sent.bytes), 1.05 * static_cast<double>(value_bytes))
                  << what;
              if (drop > 0) {
                EXPECT_GT(sent.retransmitted, 0u) << what;
              }
            },
            [&](TransportOptions& transport, int rank) {
              transport.inject.drop_rate = drop;
              transport.inject.seed = 300 + static_cast<std::uint64_t>(rank);
            });
      }
    }
  }
}

TEST(ReduceScatter, InvalidArgumentsAreRefusedWithTheirName) {
  run_communicators(2, communicator_options(Algorithm::kRing), [&](Communicator& comm) {
    std::vector<float> input(10, 1.0f);
    std::vector<float> small(3);
    expect_refused([&] { comm.reduce_scatter(input, small); },
                   "reduce_scatter input holds 10 floats, expected the output's 3 x 2");
    std::vector<float> output(5);
    std::vector<float> residual(5);
    expect_refused(
        [&] {
          comm.reduce_scatter(input, output,
                              {.wire = WireDtype::kBfloat16, .error_feedback = residual});
        },
        "holds 5 floats for 10 values");
    std::vector<float> full(10);
    expect_refused([&] { comm.reduce_scatter(input, output, {.error_feedback = full}); },
                   "needs a 16-bit wire");
    expect_refused([&] { comm.reduce_scatter(input, output, {.loss_budget = 2}); }, "loss_budget");
    // Nothing was started: the communicator still works.
    comm.reduce_scatter(input, output).wait();
    EXPECT_EQ(output, std::vector<float>(5, 2.0f));
  });
}

}  // namespace
}  // namespace dlcp::test
