// The Gloo baseline against real Gloo over loopback TCP: ranks are threads of this process that
// meet through a dlcp::HashStore. Inputs are small integers so that every sum is exact; the fp16
// baseline's are not, and its results are checked against half precision's bounds.
#include <gloo/types.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <ostream>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "baseline_gloo.hpp"
#include "dlcp/error.hpp"
#include "dlcp/store.hpp"

namespace dlcp::test {
namespace {

using tools::GlooAllreduce;

constexpr const char* kLoopback = "127.0.0.1";

float input_value(int rank, std::size_t index) {
  return static_cast<float>((rank + 1) * static_cast<int>(index % 251 + 1));
}

float expected_sum(int size, std::size_t index) {
  return static_cast<float>(size * (size + 1) / 2 * static_cast<int>(index % 251 + 1));
}

void fill(std::span<float> values, int rank) {
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = input_value(rank, i);
}

// Index of the first wrong element, or values.size() when all are right.
std::size_t first_mismatch(std::span<const float> values, int size) {
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (values[i] != expected_sum(size, i)) return i;
  }
  return values.size();
}

// Runs body(gloo) on `size` ranks, one thread each, and rethrows the first rank's failure.
void run_ranks(int size, const std::function<void(GlooAllreduce&)>& body) {
  HashStore store;
  store.set_timeout(std::chrono::seconds(20));
  std::vector<std::exception_ptr> failures(static_cast<std::size_t>(size));
  std::vector<std::thread> threads;
  for (int rank = 0; rank < size; ++rank) {
    threads.emplace_back([&, rank] {
      try {
        GlooAllreduce gloo(store, rank, size, kLoopback);
        body(gloo);
      } catch (...) {
        failures[static_cast<std::size_t>(rank)] = std::current_exception();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (const auto& failure : failures) {
    if (failure) std::rethrow_exception(failure);
  }
}

struct Case {
  int size;
  std::string algorithm;
};

class GlooAllreduceTest : public ::testing::TestWithParam<Case> {};

TEST_P(GlooAllreduceTest, SumsExactlyAndAgainOnTheSameBuffer) {
  const auto [size, algorithm] = GetParam();
  // Odd lengths, so that no algorithm gets evenly divisible chunks; the largest spans several
  // of Gloo's segments.
  const std::vector<std::size_t> lengths{1, 7, 1000, (1u << 18) + 5};
  // Per rank, for every call: the index of the first wrong element (== length when none).
  std::vector<std::vector<std::size_t>> mismatches(static_cast<std::size_t>(size));
  run_ranks(size, [&](GlooAllreduce& gloo) {
    for (const auto length : lengths) {
      std::vector<float> values(length);
      // Twice: the second call reuses the cached algorithm object for this buffer.
      for (int repeat = 0; repeat < 2; ++repeat) {
        fill(values, gloo.rank());
        gloo.allreduce(values, algorithm);
        mismatches[static_cast<std::size_t>(gloo.rank())].push_back(first_mismatch(values, size));
      }
    }
    gloo.barrier();
  });
  for (int rank = 0; rank < size; ++rank) {
    const auto& found = mismatches[static_cast<std::size_t>(rank)];
    ASSERT_EQ(found.size(), lengths.size() * 2) << "rank " << rank;
    for (std::size_t call = 0; call < found.size(); ++call) {
      EXPECT_EQ(found[call], lengths[call / 2])
          << "rank " << rank << ", length " << lengths[call / 2] << ", call " << call % 2
          << ": first wrong element at this index";
    }
  }
}

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (int size : {2, 3, 4}) {
    auto algorithms = GlooAllreduce::algorithms();
    algorithms.insert(algorithms.end(), {"ring", "new_bcube"});
    for (const auto& algorithm : algorithms) cases.push_back({size, algorithm});
  }
  return cases;
}

void PrintTo(const Case& test_case, std::ostream* out) {
  *out << test_case.algorithm << " on " << test_case.size << " ranks";
}

std::string case_name(const ::testing::TestParamInfo<Case>& param) {
  return param.param.algorithm + "_" + std::to_string(param.param.size) + "_ranks";
}

INSTANTIATE_TEST_SUITE_P(Algorithms, GlooAllreduceTest, ::testing::ValuesIn(all_cases()),
                         case_name);

// The fp16 baseline (fp16_compress_hook): each rank's values / size rounded to half, summed in
// half by Gloo. Inputs with 24 significant bits and magnitudes from 2^-6 to 2^9, so that every
// rounding shows.
float fp16_input(int rank, std::size_t index) {
  const auto mixed = static_cast<std::uint32_t>(index * 2654435761u + rank * 40503u);
  const float mantissa = 1.0f + static_cast<float>(mixed & 0xFFFFFF) / 16777216.0f;
  const float magnitude = std::ldexp(mantissa, static_cast<int>((mixed >> 24) % 16) - 6);
  return (mixed >> 31) != 0 ? -magnitude : magnitude;
}

class GlooFp16Test : public ::testing::TestWithParam<Case> {};

TEST_P(GlooFp16Test, AveragesWithinHalfPrecisionAndAlikeOnEveryRank) {
  const auto [size, algorithm] = GetParam();
  const std::vector<std::size_t> lengths{1, 7, 1000, (1u << 18) + 5};
  // Per rank, per length, per call: the result.
  std::vector<std::vector<std::vector<float>>> results(static_cast<std::size_t>(size));
  run_ranks(size, [&](GlooAllreduce& gloo) {
    for (const auto length : lengths) {
      std::vector<float> values(length);
      // Twice: the second call reuses the cached half buffer and algorithm object.
      for (int repeat = 0; repeat < 2; ++repeat) {
        for (std::size_t i = 0; i < length; ++i) values[i] = fp16_input(gloo.rank(), i);
        gloo.allreduce_fp16_average(values, algorithm);
        results[static_cast<std::size_t>(gloo.rank())].push_back(values);
      }
    }
    gloo.barrier();
  });
  // Each input's rounding to half costs at most 2^-11 of its magnitude (over size), and each of
  // the size-1 additions in half at most 2^-11 of its partial sum: within 2^-11 x size of the
  // sum of magnitudes over size, less than binary16's 2^-24 subnormal step where it is tiny.
  const double half_epsilon = std::ldexp(1.0, -11);
  for (std::size_t call = 0; call < lengths.size() * 2; ++call) {
    const auto& first = results[0][call];
    ASSERT_EQ(first.size(), lengths[call / 2]);
    std::size_t inexact = 0;
    for (std::size_t i = 0; i < first.size(); ++i) {
      double average = 0;
      double magnitude = 0;
      for (int rank = 0; rank < size; ++rank) {
        average += static_cast<double>(fp16_input(rank, i)) / size;
        magnitude += std::abs(static_cast<double>(fp16_input(rank, i))) / size;
      }
      const double bound = half_epsilon * size * magnitude + std::ldexp(1.0, -24) * size;
      ASSERT_NEAR(first[i], average, bound)
          << algorithm << ", " << size << " ranks, length " << first.size() << ", entry " << i;
      if (first[i] != static_cast<float>(average)) ++inexact;
    }
    // Half precision, not float32: most averages of 24-bit inputs cannot be exact.
    if (first.size() >= 1000) {
      EXPECT_GT(inexact, first.size() / 2);
    }
    for (int rank = 1; rank < size; ++rank) {
      const auto& other = results[static_cast<std::size_t>(rank)][call];
      ASSERT_EQ(other.size(), first.size());
      EXPECT_TRUE(std::equal(first.begin(), first.end(), other.begin(),
                             [](float a, float b) {
                               return std::bit_cast<std::uint32_t>(a) ==
                                      std::bit_cast<std::uint32_t>(b);
                             }))
          << "rank " << rank << " differs from rank 0: " << algorithm << ", length "
          << first.size();
    }
  }
}

std::vector<Case> fp16_cases() {
  std::vector<Case> cases;
  for (int size : {2, 3}) {
    for (const auto& algorithm : GlooAllreduce::algorithms()) cases.push_back({size, algorithm});
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Algorithms, GlooFp16Test, ::testing::ValuesIn(fp16_cases()), case_name);

// On 2 ranks every entry is one addition, so the result is known bit for bit: each rank's value
// halved and rounded to half, the two added and rounded to half, then widened, as Gloo's own
// scalar routines do it. The baseline's vectorised conversions and sum must match them across
// half's whole range: subnormals, ties, overflow to infinity.
TEST(GlooAllreduce, Fp16MatchesGloosScalarArithmeticBitForBit) {
  std::vector<float> inputs;
  // Halved, from below half's least subnormal (2^-24) to below its largest value.
  for (int exponent = -30; exponent <= 15; ++exponent) {
    for (std::uint32_t step = 0; step < 64; ++step) {
      // 24-bit mantissas, ties of half's rounding among them (step 32: the 13 dropped bits are
      // exactly one half), and both signs.
      const std::uint32_t low = step == 32 ? 0x1000 : step * 2654435761u % 0x800000;
      const float mantissa = 1.0f + static_cast<float>(low) / 8388608.0f;
      const float value = std::ldexp(mantissa, exponent);
      inputs.push_back(step % 2 == 0 ? value : -value);
    }
  }
  inputs.insert(inputs.end(), {0.0f, -0.0f, 65504.0f * 2, 65520.0f * 2, -65520.0f * 2});
  // Rank 0 sends them twice; rank 1 sends them reversed (magnitudes far apart), then shifted by
  // one exponent (magnitudes alike, down to subnormal sums).
  const std::size_t count = inputs.size();
  std::vector<float> first(inputs);
  first.insert(first.end(), inputs.begin(), inputs.end());
  std::vector<float> second(inputs.rbegin(), inputs.rend());
  for (std::size_t i = 0; i < count; ++i) second.push_back(inputs[(i + 64) % count]);
  std::vector<float> expected;
  std::size_t subnormal = 0;
  std::size_t infinite = 0;
  for (std::size_t i = 0; i < first.size(); ++i) {
    const gloo::float16 sum =
        gloo::cpu_float2half_rn(first[i] / 2) + gloo::cpu_float2half_rn(second[i] / 2);
    expected.push_back(gloo::cpu_half2float(sum));
    if (expected.back() != 0 && std::abs(expected.back()) < std::ldexp(1.0f, -14)) ++subnormal;
    if (std::isinf(expected.back())) ++infinite;
  }
  EXPECT_GT(subnormal, 10u);  // the range reached half's subnormals
  EXPECT_GT(infinite, 0u);    // and its overflow (65520 rounds to infinity, 65504 does not)
  for (const auto& algorithm : GlooAllreduce::algorithms()) {
    std::vector<std::vector<float>> results(2);
    run_ranks(2, [&](GlooAllreduce& gloo) {
      std::vector<float> values = gloo.rank() == 0 ? first : second;
      gloo.allreduce_fp16_average(values, algorithm);
      results[static_cast<std::size_t>(gloo.rank())] = values;
      gloo.barrier();
    });
    for (std::size_t rank = 0; rank < 2; ++rank) {
      ASSERT_EQ(results[rank].size(), first.size());
      std::size_t wrong = 0;
      for (std::size_t i = 0; i < first.size(); ++i) {
        if (results[rank][i] == expected[i]) continue;
        if (++wrong <= 5) {
          ADD_FAILURE() << algorithm << ", rank " << rank << ": " << first[i] << " + " << second[i]
                        << " gave " << results[rank][i] << ", expected " << expected[i];
        }
      }
      EXPECT_EQ(wrong, 0u) << algorithm << ", rank " << rank;
    }
  }
}

TEST(GlooAllreduce, OffersTheLargeBufferAlgorithms) {
  const auto offered = GlooAllreduce::algorithms();
  for (const char* expected : {"ring_chunked", "halving_doubling", "new_ring"}) {
    EXPECT_NE(std::find(offered.begin(), offered.end(), expected), offered.end()) << expected;
  }
}

TEST(GlooAllreduce, RejectsAnUnknownAlgorithm) {
  run_ranks(2, [](GlooAllreduce& gloo) {
    std::vector<float> values(16, 1.0f);
    try {
      gloo.allreduce(values, "no_such_algorithm");
      ADD_FAILURE() << "expected dlcp::Error";
    } catch (const Error& error) {
      EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(error.what()).find("no_such_algorithm"), std::string::npos);
    }
    gloo.barrier();
  });
}

TEST(GlooAllreduce, DoesNotOfferTheOldBcubeThatSumsWrongly) {
  run_ranks(3, [](GlooAllreduce& gloo) {
    std::vector<float> values(64, 1.0f);
    try {
      gloo.allreduce(values, "bcube");
      ADD_FAILURE() << "expected dlcp::Error";
    } catch (const Error& error) {
      EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
    }
    gloo.barrier();
  });
}

TEST(GlooAllreduce, RejectsARankOutsideTheWorld) {
  HashStore store;
  EXPECT_THROW(GlooAllreduce(store, 2, 2, kLoopback), Error);
}

TEST(GlooAllreduce, ReportsAMissingPeerAsAnError) {
  HashStore store;
  store.set_timeout(std::chrono::milliseconds(300));
  // Rank 1 never shows up: the rendezvous must fail with an exception, not hang.
  EXPECT_THROW(GlooAllreduce(store, 0, 2, kLoopback), std::runtime_error);
}

}  // namespace
}  // namespace dlcp::test
