// Every algorithm, several world sizes and sizes: results equal the exact sum or average, and a
// lossless collective delivers everything.
#include "collectives_fixture.hpp"

namespace dlcp::test {
namespace {

struct Case {
  Algorithm algorithm;
  int workers;
  int servers;
};

std::string name_of(const testing::TestParamInfo<Case>& info) {
  return std::string(to_string(info.param.algorithm)) + "_" + std::to_string(info.param.workers) +
         "w" + std::to_string(info.param.servers) + "s";
}

class ExactAllreduce : public testing::TestWithParam<Case> {};

TEST_P(ExactAllreduce, SumAndAverageAreExact) {
  const Case c = GetParam();
  // Uneven sizes: one float, fewer blocks than ranks, and a size that is not a block multiple.
  const std::vector<std::size_t> sizes = {1, 500, 100'003};
  run_communicators(
      c.workers + c.servers, communicator_options(c.algorithm, c.servers), [&](Communicator& comm) {
        ASSERT_EQ(comm.size(), c.workers);
        int iteration = 0;
        for (const std::size_t n : sizes) {
          for (const ReduceOp op : {ReduceOp::kSum, ReduceOp::kAverage}) {
            auto values = exact_input(n, comm.rank(), iteration);
            auto expected = exact_sum(n, c.workers, iteration);
            if (op == ReduceOp::kAverage) {
              for (auto& v : expected) v /= static_cast<float>(c.workers);
            }
            const auto result = comm.allreduce(values, {.op = op}).wait();
            EXPECT_TRUE(bit_equal(values, expected)) << "n=" << n << " op=" << static_cast<int>(op);
            EXPECT_EQ(result.entries, n);
            EXPECT_DOUBLE_EQ(result.delivered_fraction, 1.0);
            EXPECT_EQ(result.broadcast_entries_missing, 0u);
            ++iteration;
          }
        }
      });
}

INSTANTIATE_TEST_SUITE_P(Algorithms, ExactAllreduce,
                         testing::Values(Case{Algorithm::kRing, 2, 0}, Case{Algorithm::kRing, 3, 0},
                                         Case{Algorithm::kRing, 4, 0},
                                         Case{Algorithm::kTranspose, 2, 0},
                                         Case{Algorithm::kTranspose, 3, 0},
                                         Case{Algorithm::kTranspose, 4, 0},
                                         Case{Algorithm::kParameterServer, 2, 1},
                                         Case{Algorithm::kParameterServer, 3, 2}),
                         name_of);

TEST(Collectives, ConcurrentAllreducesOfDifferentLayersAllComplete) {
  constexpr int kWorld = 3;
  constexpr int kTensors = 6;
  run_communicators(kWorld, communicator_options(Algorithm::kRing), [&](Communicator& comm) {
    std::vector<std::vector<float>> tensors;
    std::vector<Work> works;
    for (int t = 0; t < kTensors; ++t)
      tensors.push_back(exact_input(20'000 + 7 * t, comm.rank(), t));
    // Back layers first, as backward releases them; mixed algorithms on one communicator.
    for (int t = kTensors - 1; t >= 0; --t) {
      works.push_back(
          comm.allreduce(tensors[static_cast<std::size_t>(t)],
                         {.layer = t,
                          .num_layers = kTensors,
                          .algorithm = t % 2 == 0 ? Algorithm::kRing : Algorithm::kTranspose}));
    }
    for (auto& work : works) work.wait();
    for (int t = 0; t < kTensors; ++t) {
      EXPECT_TRUE(
          bit_equal(tensors[static_cast<std::size_t>(t)], exact_sum(20'000 + 7 * t, kWorld, t)))
          << "tensor " << t;
    }
  });
}

TEST(Collectives, BroadcastAllgatherAndBarrier) {
  constexpr int kWorld = 3;
  run_communicators(kWorld, communicator_options(Algorithm::kTranspose), [&](Communicator& comm) {
    auto values = exact_input(10'001, comm.rank());
    comm.broadcast(values, 2).wait();
    EXPECT_TRUE(bit_equal(values, exact_input(10'001, 2)));

    const auto input = exact_input(777, comm.rank());
    std::vector<float> gathered(777 * kWorld);
    comm.allgather(input, gathered).wait();
    for (int r = 0; r < kWorld; ++r) {
      const auto expected = exact_input(777, r);
      EXPECT_TRUE(std::equal(expected.begin(), expected.end(), gathered.begin() + 777 * r)) << r;
    }
    comm.barrier();
  });
}

TEST(Collectives, SingleRankIsANoOpForSumAndIdentityForAverage) {
  run_communicators(1, communicator_options(Algorithm::kRing), [&](Communicator& comm) {
    auto values = exact_input(1000, 0);
    comm.allreduce(values, {.op = ReduceOp::kAverage}).wait();
    EXPECT_TRUE(bit_equal(values, exact_input(1000, 0)));
    comm.barrier();
  });
}

TEST(Collectives, InvalidArgumentsAreRefusedWithTheirName) {
  run_communicators(2, communicator_options(Algorithm::kRing), [&](Communicator& comm) {
    std::vector<float> values(10);
    try {
      comm.allreduce(values, {.layer = 5, .num_layers = 2});
      ADD_FAILURE() << "layer outside num_layers accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("layer"), std::string::npos) << e.what();
    }
    try {
      comm.allreduce(values, {.algorithm = Algorithm::kParameterServer});
      ADD_FAILURE() << "ps all-reduce without servers accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("servers"), std::string::npos) << e.what();
    }
    std::vector<float> small(3);
    EXPECT_THROW(comm.allgather(values, small), Error);
    EXPECT_THROW(comm.broadcast(values, 7), Error);
    comm.barrier();
  });
  HashStore store;
  EXPECT_THROW(Communicator::create(store, 0, 2, communicator_options(Algorithm::kParameterServer)),
               Error);
  auto bad = communicator_options(Algorithm::kRing);
  bad.servers = 2;
  EXPECT_THROW(Communicator::create(store, 0, 2, bad), Error);
}

}  // namespace
}  // namespace dlcp::test
