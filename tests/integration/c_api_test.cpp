// The C API from three ranks as threads through a TCP store: exact all-reduce and reduce-scatter,
// loss reporting, and clear errors for bad arguments (never an exception or abort through C).
#include "dlcp/c_api.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "collectives_fixture.hpp"

namespace dlcp::test {
namespace {

TEST(CApi, AllreduceBroadcastAllgatherAndBarrier) {
  constexpr int kWorld = 3;
  TcpStoreServer server("127.0.0.1", 0);
  const std::uint16_t port = server.port();
  run_per_rank(kWorld, [&](int rank) {
    dlcp_comm* comm = nullptr;
    ASSERT_EQ(
        dlcp_comm_create_tcp("127.0.0.1", port, 0, rank, kWorld, DLCP_ALGO_TRANSPOSE, 0, &comm),
        DLCP_OK)
        << dlcp_last_error();
    EXPECT_EQ(dlcp_comm_rank(comm), rank);
    EXPECT_EQ(dlcp_comm_size(comm), kWorld);
    EXPECT_EQ(dlcp_comm_is_server(comm), 0);

    auto values = exact_input(5000, rank);
    dlcp_collective_options options;
    dlcp_collective_options_init(&options);
    dlcp_work* work = nullptr;
    ASSERT_EQ(dlcp_allreduce(comm, values.data(), values.size(), &options, &work), DLCP_OK);
    dlcp_result result;
    ASSERT_EQ(dlcp_work_wait(work, &result), DLCP_OK) << dlcp_last_error();
    EXPECT_EQ(dlcp_work_ready(work), 1);
    dlcp_work_free(work);
    EXPECT_TRUE(bit_equal(values, exact_sum(5000, kWorld)));
    EXPECT_EQ(result.entries, 5000u);
    EXPECT_DOUBLE_EQ(result.delivered_fraction, 1.0);
    // Forced hierarchical on one host: the same exact sum.
    values = exact_input(5000, rank);
    options.topology = DLCP_TOPOLOGY_HIERARCHICAL;
    ASSERT_EQ(dlcp_allreduce(comm, values.data(), values.size(), &options, &work), DLCP_OK);
    ASSERT_EQ(dlcp_work_wait(work, &result), DLCP_OK) << dlcp_last_error();
    dlcp_work_free(work);
    EXPECT_TRUE(bit_equal(values, exact_sum(5000, kWorld)));
    dlcp_collective_options_init(&options);

    std::vector<float> root_values = exact_input(100, 1);
    std::vector<float> mine = rank == 1 ? root_values : std::vector<float>(100, 0.0f);
    ASSERT_EQ(dlcp_broadcast(comm, mine.data(), mine.size(), 1, nullptr, &work), DLCP_OK);
    ASSERT_EQ(dlcp_work_wait(work, nullptr), DLCP_OK);
    dlcp_work_free(work);
    EXPECT_EQ(mine, root_values);

    const float own = static_cast<float>(rank);
    std::vector<float> gathered(kWorld);
    ASSERT_EQ(dlcp_allgather(comm, &own, 1, gathered.data(), nullptr, &work), DLCP_OK);
    ASSERT_EQ(dlcp_work_wait(work, nullptr), DLCP_OK);
    dlcp_work_free(work);
    EXPECT_EQ(gathered, (std::vector<float>{0, 1, 2}));

    // Bad input: a status and a message, nothing thrown.
    options.layer = 3;  // outside num_layers = 1
    EXPECT_EQ(dlcp_allreduce(comm, values.data(), values.size(), &options, &work),
              DLCP_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(dlcp_last_error()).find("layer"), std::string::npos);
    EXPECT_EQ(dlcp_allreduce(comm, nullptr, 10, nullptr, &work), DLCP_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(dlcp_work_wait(nullptr, nullptr), DLCP_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(dlcp_comm_serve(comm), DLCP_ERR_INVALID_ARGUMENT);

    // A bf16 wire with error feedback: integer inputs this small are exact in bf16.
    dlcp_collective_options_init(&options);
    options.wire = DLCP_WIRE_BF16;
    std::vector<float> residual(values.size(), 0.0f);
    options.error_feedback = residual.data();
    options.error_feedback_count = residual.size();
    const auto small_input = [](int r) {
      auto input = exact_input(5000, r);
      for (auto& v : input) v = static_cast<float>(static_cast<int>(v) % 64);
      return input;
    };
    values = small_input(rank);
    std::vector<float> expected(values.size(), 0.0f);
    for (int r = 0; r < kWorld; ++r) {
      const auto input = small_input(r);
      for (std::size_t i = 0; i < input.size(); ++i) expected[i] += input[i];
    }
    ASSERT_EQ(dlcp_allreduce(comm, values.data(), values.size(), &options, &work), DLCP_OK)
        << dlcp_last_error();
    ASSERT_EQ(dlcp_work_wait(work, nullptr), DLCP_OK) << dlcp_last_error();
    dlcp_work_free(work);
    EXPECT_EQ(values, expected);
    EXPECT_EQ(residual, std::vector<float>(values.size(), 0.0f));
    options.error_feedback_count = 0;  // a pointer without a count
    EXPECT_EQ(dlcp_allreduce(comm, values.data(), values.size(), &options, &work),
              DLCP_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(dlcp_last_error()).find("error_feedback"), std::string::npos);
    options.error_feedback = nullptr;
    options.wire = static_cast<dlcp_wire_dtype>(3);  // not a dtype
    EXPECT_EQ(dlcp_allreduce(comm, values.data(), values.size(), &options, &work),
              DLCP_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(dlcp_last_error()).find("wire dtype"), std::string::npos);

    EXPECT_EQ(dlcp_barrier(comm), DLCP_OK);
    dlcp_comm_destroy(comm);
  });
}

TEST(CApi, ReduceScatterLeavesEachRankItsShard) {
  constexpr int kWorld = 3;
  constexpr std::size_t kShard = 1001;
  TcpStoreServer server("127.0.0.1", 0);
  const std::uint16_t port = server.port();
  run_per_rank(kWorld, [&](int rank) {
    dlcp_comm* comm = nullptr;
    ASSERT_EQ(dlcp_comm_create_tcp("127.0.0.1", port, 0, rank, kWorld, DLCP_ALGO_RING, 0, &comm),
              DLCP_OK)
        << dlcp_last_error();
    const auto input = exact_input(kShard * kWorld, rank);
    std::vector<float> output(kShard);
    dlcp_collective_options options;
    dlcp_collective_options_init(&options);
    options.op = DLCP_OP_AVERAGE;
    dlcp_work* work = nullptr;
    ASSERT_EQ(dlcp_reduce_scatter(comm, input.data(), kShard, output.data(), &options, &work),
              DLCP_OK)
        << dlcp_last_error();
    dlcp_result result;
    ASSERT_EQ(dlcp_work_wait(work, &result), DLCP_OK) << dlcp_last_error();
    dlcp_work_free(work);
    auto expected = exact_sum(kShard * kWorld, kWorld);
    for (auto& v : expected) v /= kWorld;
    EXPECT_TRUE(std::equal(output.begin(), output.end(),
                           expected.begin() + static_cast<std::ptrdiff_t>(kShard) * rank));
    EXPECT_EQ(result.entries, kShard);
    EXPECT_EQ(result.contributions_expected, kShard * kWorld);
    EXPECT_DOUBLE_EQ(result.delivered_fraction, 1.0);

    // Bad input: a status and a message, nothing thrown.
    EXPECT_EQ(dlcp_reduce_scatter(comm, nullptr, kShard, output.data(), nullptr, &work),
              DLCP_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(dlcp_last_error()).find("input and output"), std::string::npos);
    options.wire = DLCP_WIRE_BF16;
    std::vector<float> residual(kShard);  // one per output value, not per input value
    options.error_feedback = residual.data();
    options.error_feedback_count = residual.size();
    EXPECT_EQ(dlcp_reduce_scatter(comm, input.data(), kShard, output.data(), &options, &work),
              DLCP_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(dlcp_last_error()).find("error_feedback"), std::string::npos)
        << dlcp_last_error();

    EXPECT_EQ(dlcp_barrier(comm), DLCP_OK);
    dlcp_comm_destroy(comm);
  });
}

TEST(CApi, EnvironmentErrorsNameTheVariable) {
  ::setenv("DLCP_RANK", "5", 1);
  ::setenv("DLCP_WORLD_SIZE", "2", 1);
  ::setenv("DLCP_STORE", "tcp://127.0.0.1:1", 1);
  dlcp_comm* comm = nullptr;
  EXPECT_EQ(dlcp_comm_create_from_env(&comm), DLCP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(comm, nullptr);
  EXPECT_NE(std::string(dlcp_last_error()).find("DLCP_RANK"), std::string::npos)
      << dlcp_last_error();
  ::unsetenv("DLCP_RANK");
  ::unsetenv("DLCP_WORLD_SIZE");
  ::unsetenv("DLCP_STORE");
}

}  // namespace
}  // namespace dlcp::test
