// Communicator::send / recv: tags matched in order per (peer, tag) whatever order the receives
// are posted in, empty transfers, and refusals that name what is wrong.
#include <algorithm>

#include "collectives_fixture.hpp"

namespace dlcp::test {
namespace {

std::vector<float> filled(std::size_t n, float base) {
  std::vector<float> values(n);
  for (std::size_t i = 0; i < n; ++i) values[i] = base + static_cast<float>(i);
  return values;
}

TEST(PointToPoint, TagsMatchInOrderWhateverTheReceivesOrder) {
  run_communicators(2, communicator_options(Algorithm::kRing), [&](Communicator& comm) {
    if (comm.rank() == 0) {
      const auto a = filled(100'003, 1);
      const auto b = filled(7, 1000);
      const auto c = filled(50, 5000);
      std::vector<Work> works = {comm.send(a, 1, 1), comm.send(b, 1, 2), comm.send(c, 1, 1)};
      for (const Work& work : works) work.wait();
    } else {
      std::vector<float> b(7), a(100'003), c(50);
      // Posted in another order than sent: the tag, then the order within it, decides.
      Work second_tag = comm.recv(b, 0, 2);
      Work first = comm.recv(a, 0, 1);
      Work third = comm.recv(c, 0, 1);
      EXPECT_EQ(first.wait().entries, a.size());
      second_tag.wait();
      third.wait();
      EXPECT_TRUE(bit_equal(a, filled(100'003, 1)));
      EXPECT_TRUE(bit_equal(b, filled(7, 1000)));
      EXPECT_TRUE(bit_equal(c, filled(50, 5000)));
    }
  });
}

TEST(PointToPoint, BothWaysAtOnceAndEmptyTransfers) {
  run_communicators(3, communicator_options(Algorithm::kRing), [&](Communicator& comm) {
    const int next = (comm.rank() + 1) % 3;
    const int previous = (comm.rank() + 2) % 3;
    const auto mine = filled(4096, static_cast<float>(comm.rank() * 10'000));
    std::vector<float> theirs(4096);
    Work received = comm.recv(theirs, previous, 0);
    Work sent = comm.send(mine, next, 0);
    std::vector<float> nothing;
    EXPECT_EQ(comm.send(nothing, next, 9).wait().entries, 0u);
    EXPECT_EQ(comm.recv(nothing, previous, 9).wait().entries, 0u);
    received.wait();
    sent.wait();
    EXPECT_TRUE(bit_equal(theirs, filled(4096, static_cast<float>(previous * 10'000))));
    // Collectives still line up after point-to-point traffic.
    auto values = exact_input(1000, comm.rank());
    comm.allreduce(values).wait();
    EXPECT_TRUE(bit_equal(values, exact_sum(1000, 3)));
  });
}

TEST(PointToPoint, ReceiveFromAnySourceTakesTheFirstAndLeavesTheRestInOrder) {
  run_communicators(3, communicator_options(Algorithm::kRing), [&](Communicator& comm) {
    if (comm.rank() == 0) {
      // One transfer with tag 5 from each peer, received without naming it.
      std::vector<int> sources;
      for (int k = 0; k < 2; ++k) {
        std::vector<float> values(300);
        const CollectiveResult result = comm.recv_any(values, 5).wait();
        ASSERT_TRUE(result.source == 1 || result.source == 2) << result.source;
        EXPECT_TRUE(bit_equal(values, filled(300, static_cast<float>(result.source * 1000))));
        sources.push_back(result.source);
      }
      std::sort(sources.begin(), sources.end());
      EXPECT_EQ(sources, (std::vector<int>{1, 2}));
      // The second any-source receive left a receive of the other peer's next transfer posted
      // ahead: receives by name still get each peer's transfers in order.
      comm.barrier();
      for (const int peer : {2, 1}) {
        std::vector<float> values(300);
        EXPECT_EQ(comm.recv(values, peer, 5).wait().source, peer);
        EXPECT_TRUE(bit_equal(values, filled(300, static_cast<float>(peer * 1000 + 1))));
      }
    } else {
      comm.send(filled(300, static_cast<float>(comm.rank() * 1000)), 0, 5).wait();
      comm.barrier();  // the second only once rank 0 has both first ones
      comm.send(filled(300, static_cast<float>(comm.rank() * 1000 + 1)), 0, 5).wait();
    }
  });
}

TEST(PointToPoint, AnySourceTimesOutAndKeepsThePeersPlace) {
  run_communicators(2, communicator_options(Algorithm::kRing), [&](Communicator& comm) {
    std::vector<float> values(10);
    if (comm.rank() == 0) {
      EXPECT_THROW(comm.recv_any(values, 1, {.deadline = std::chrono::milliseconds(300)}).wait(),
                   Error);
      comm.barrier();  // the peer sends only now
      EXPECT_EQ(comm.recv(values, 1, 1).wait().source, 1);
      EXPECT_TRUE(bit_equal(values, filled(10, 7)));
    } else {
      comm.barrier();
      comm.send(filled(10, 7), 0, 1).wait();
    }
  });
}

TEST(PointToPoint, AnySourceReceivesWaitingTogetherTakeOnePeersTransfersInTurn) {
  run_communicators(2, communicator_options(Algorithm::kRing), [&](Communicator& comm) {
    const CollectiveOptions options{.deadline = std::chrono::seconds(10)};
    if (comm.rank() == 0) {
      // Both wait before anything arrives: the first takes the first transfer, and the second
      // gets the peer's next one posted for it then.
      std::vector<float> first(10), second(10);
      Work a = comm.recv_any(first, 4, options);
      Work b = comm.recv_any(second, 4, options);
      comm.barrier();
      EXPECT_EQ(a.wait().source, 1);
      EXPECT_EQ(b.wait().source, 1);
      EXPECT_TRUE(bit_equal(first, filled(10, 1)));
      EXPECT_TRUE(bit_equal(second, filled(10, 2)));
    } else {
      comm.barrier();
      comm.send(filled(10, 1), 0, 4, options).wait();
      comm.send(filled(10, 2), 0, 4, options).wait();
    }
  });
}

TEST(PointToPoint, RefusesItselfOtherRanksAndABudget) {
  run_communicators(2, communicator_options(Algorithm::kRing), [&](Communicator& comm) {
    std::vector<float> values(4);
    const auto refused = expect_refused;
    refused([&] { comm.send(values, comm.rank(), 0); }, "not another worker");
    refused([&] { comm.recv(values, 2, 0); }, "not another worker");
    refused([&] { comm.send(values, 1 - comm.rank(), 0, {.loss_budget = 0.1}); },
            "must not set a loss budget");
    std::vector<float> empty;
    refused([&] { comm.recv_any(empty, 0); }, "empty buffer");
  });
}

TEST(PointToPoint, ASizeMismatchFailsBothSidesQuickly) {
  run_communicators(2, communicator_options(Algorithm::kRing), [&](Communicator& comm) {
    const auto start = std::chrono::steady_clock::now();
    if (comm.rank() == 0) {
      const auto values = filled(64, 0);
      EXPECT_THROW(comm.send(values, 1, 3).wait(), Error);
    } else {
      std::vector<float> values(32);
      try {
        comm.recv(values, 0, 3).wait();
        ADD_FAILURE() << "a receive of 32 floats took a send of 64";
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("64 floats"), std::string::npos) << e.what();
      }
    }
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  });
}

}  // namespace
}  // namespace dlcp::test
