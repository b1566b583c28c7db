// The Gloo baseline against real Gloo over loopback TCP: ranks are threads of this process that
// meet through a dlcp::HashStore. Inputs are small integers so that every sum is exact.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
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
