// Hierarchical collectives (CommunicatorOptions::topology, host_id): ranks given host ids so that
// some share a "host" and others do not; every collective against a reference, bit for bit
// across ranks, with uneven hosts and odd sizes, a 16-bit wire, and loss between hosts.
#include <algorithm>
#include <cmath>
#include <mutex>

#include "collectives_fixture.hpp"

namespace dlcp::test {
namespace {

struct RankOutcome {
  std::vector<float> values;
  CollectiveResult result;
  TransportCounters counters;
};

// Runs `work(comm, rank)` on one rank per letter of `hosts` (equal letters = one host), with
// every rank's options from `options` and `customize`, and returns each rank's outcome.
std::vector<RankOutcome> run_hosts(
    const std::string& hosts, const CommunicatorOptions& options,
    const std::function<RankOutcome(Communicator&, int)>& work,
    const std::function<void(CommunicatorOptions&, int)>& customize = {}) {
  const int world = static_cast<int>(hosts.size());
  HashStore store;
  store.set_timeout(std::chrono::seconds(20));
  std::vector<RankOutcome> outcomes(hosts.size());
  run_per_rank(world, [&](int rank) {
    CommunicatorOptions mine = options;
    mine.host_id = std::string(1, hosts[static_cast<std::size_t>(rank)]);
    if (customize) customize(mine, rank);
    auto comm = Communicator::create(store, rank, world, mine);
    outcomes[static_cast<std::size_t>(rank)] = work(*comm, rank);
    outcomes[static_cast<std::size_t>(rank)].counters = comm->counters();
  });
  return outcomes;
}

CommunicatorOptions hierarchical_options(Algorithm algorithm, Topology topology) {
  CommunicatorOptions options = communicator_options(algorithm);
  options.topology = topology;
  return options;
}

void expect_identical(const std::vector<RankOutcome>& outcomes) {
  for (std::size_t r = 1; r < outcomes.size(); ++r) {
    EXPECT_TRUE(bit_equal(outcomes[r].values, outcomes[0].values)) << "rank " << r;
  }
}

// Summed over the ranks, the reduce side counts every entry once per worker.
void expect_counted_once(const std::vector<RankOutcome>& outcomes, std::size_t entries) {
  std::uint64_t expected = 0;
  std::uint64_t received = 0;
  for (const auto& outcome : outcomes) {
    expected += outcome.result.contributions_expected;
    received += outcome.result.contributions_received;
    EXPECT_EQ(outcome.result.entries, entries);
  }
  EXPECT_EQ(expected, entries * outcomes.size());
  EXPECT_LE(received, expected);
}

const std::vector<std::string> kLayouts{"aab", "aabb", "abab", "aaab", "aabbbc", "abcabc"};

TEST(HierarchicalAllreduce, SumsExactlyAndIdenticallyForUnevenHosts) {
  for (const Algorithm algorithm : {Algorithm::kRing, Algorithm::kTranspose}) {
    for (const std::string& hosts : kLayouts) {
      for (const std::size_t n : {std::size_t{1}, std::size_t{997}, std::size_t{40'009}}) {
        SCOPED_TRACE(std::string(to_string(algorithm)) + " " + hosts + " n=" + std::to_string(n));
        const int world = static_cast<int>(hosts.size());
        const auto outcomes = run_hosts(hosts, hierarchical_options(algorithm, Topology::kAuto),
                                        [&](Communicator& c, int r) {
                                          RankOutcome outcome;
                                          outcome.values = exact_input(n, r);
                                          outcome.result = c.allreduce(outcome.values).wait();
                                          return outcome;
                                        });
        EXPECT_TRUE(bit_equal(outcomes[0].values, exact_sum(n, world)));
        expect_identical(outcomes);
        expect_counted_once(outcomes, n);
        for (const auto& outcome : outcomes) {
          EXPECT_EQ(outcome.result.contributions_received, outcome.result.contributions_expected);
          EXPECT_EQ(outcome.result.delivered_fraction, 1.0);
        }
      }
    }
  }
}

TEST(HierarchicalAllreduce, AveragesIdenticallyAndForcedOnOneHost) {
  // "aaaa" is flat under kAuto; forced, the whole reduction happens within the host.
  for (const std::string& hosts : {std::string("aaaa"), std::string("aabbbc")}) {
    SCOPED_TRACE(hosts);
    const std::size_t n = 10'007;
    const int world = static_cast<int>(hosts.size());
    const auto outcomes =
        run_hosts(hosts, hierarchical_options(Algorithm::kTranspose, Topology::kHierarchical),
                  [&](Communicator& c, int r) {
                    RankOutcome outcome;
                    outcome.values = exact_input(n, r);
                    outcome.result = c.allreduce(outcome.values, {.op = ReduceOp::kAverage}).wait();
                    return outcome;
                  });
    expect_identical(outcomes);
    expect_counted_once(outcomes, n);
    const auto sum = exact_sum(n, world);
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_EQ(outcomes[0].values[i], sum[i] / static_cast<float>(world)) << i;
    }
  }
}

TEST(HierarchicalAllreduce, SixteenBitWireStaysIdenticalAndClose) {
  for (const WireDtype wire : {WireDtype::kBfloat16, WireDtype::kFloat16}) {
    for (const Algorithm algorithm : {Algorithm::kRing, Algorithm::kTranspose}) {
      SCOPED_TRACE(std::string(to_string(wire)) + " " + to_string(algorithm));
      const std::string hosts = "aabbbc";
      const std::size_t n = 30'011;
      const auto outcomes =
          run_hosts(hosts, hierarchical_options(algorithm, Topology::kHierarchical),
                    [&](Communicator& c, int r) {
                      RankOutcome outcome;
                      outcome.values = exact_input(n, r);
                      outcome.result = c.allreduce(outcome.values, {.wire = wire}).wait();
                      return outcome;
                    });
      expect_identical(outcomes);
      const auto sum = exact_sum(n, static_cast<int>(hosts.size()));
      // Inputs, host sums and results are each rounded once (8 significant bits in bf16).
      for (std::size_t i = 0; i < n; ++i) {
        ASSERT_NEAR(outcomes[0].values[i], sum[i], 0.02 * std::abs(sum[i]) + 2.0) << i;
      }
    }
  }
}

TEST(HierarchicalAllreduce, LossBetweenHostsKeepsReplicasIdentical) {
  // Only packets between hosts are dropped (within a host the path is loss-free in practice).
  for (const Algorithm algorithm : {Algorithm::kRing, Algorithm::kTranspose}) {
    for (const std::string& hosts : {std::string("aabb"), std::string("aab")}) {
      SCOPED_TRACE(std::string(to_string(algorithm)) + " " + hosts);
      const std::size_t n = 60'013;
      const int world = static_cast<int>(hosts.size());
      CommunicatorOptions options = hierarchical_options(algorithm, Topology::kAuto);
      const auto outcomes = run_hosts(
          hosts, options,
          [&](Communicator& c, int r) {
            RankOutcome outcome;
            outcome.values = exact_input(n, r);
            outcome.result =
                c.allreduce(outcome.values, {.loss_budget = 0.05, .op = ReduceOp::kAverage}).wait();
            return outcome;
          },
          [&](CommunicatorOptions& mine, int rank) {
            auto& inject = mine.transport.inject;
            inject.source_drop_rate.assign(static_cast<std::size_t>(world), -1.0);
            for (int peer = 0; peer < world; ++peer) {
              if (hosts[static_cast<std::size_t>(peer)] != hosts[static_cast<std::size_t>(rank)]) {
                inject.source_drop_rate[static_cast<std::size_t>(peer)] = 0.03;
              }
            }
            inject.seed = 77 + static_cast<std::uint64_t>(rank);
          });
      expect_identical(outcomes);
      expect_counted_once(outcomes, n);
      std::uint64_t drops = 0;
      std::uint64_t expected = 0;
      std::uint64_t received = 0;
      for (const auto& outcome : outcomes) {
        drops += outcome.counters.injected_drops;
        expected += outcome.result.contributions_expected;
        received += outcome.result.contributions_received;
        EXPECT_LE(outcome.result.delivered_fraction, 1.0);
      }
      EXPECT_GT(drops, 0u);
      // A host's lost packet costs its workers' contributions, within the budget.
      EXPECT_GE(static_cast<double>(received), 0.9 * static_cast<double>(expected));
      // Every value is an average of some ranks' inputs: within the inputs' range.
      for (std::size_t i = 0; i < n; ++i) {
        const float v = static_cast<float>(static_cast<int>(i % 101) - 50);
        const float lo = std::min(v, v * static_cast<float>(world));
        const float hi = std::max(v, v * static_cast<float>(world));
        ASSERT_GE(outcomes[0].values[i], lo - 1e-3f) << i;
        ASSERT_LE(outcomes[0].values[i], hi + 1e-3f) << i;
      }
    }
  }
}

TEST(HierarchicalBroadcast, EveryRankGetsTheRootsValues) {
  for (const std::string& hosts : kLayouts) {
    for (int root = 0; root < static_cast<int>(hosts.size()); ++root) {
      SCOPED_TRACE(hosts + " root " + std::to_string(root));
      const std::size_t n = 5'003;
      const auto outcomes =
          run_hosts(hosts, hierarchical_options(Algorithm::kRing, Topology::kHierarchical),
                    [&](Communicator& c, int r) {
                      RankOutcome outcome;
                      outcome.values = exact_input(n, r);
                      outcome.result = c.broadcast(outcome.values, root).wait();
                      return outcome;
                    });
      EXPECT_TRUE(bit_equal(outcomes[0].values, exact_input(n, root)));
      expect_identical(outcomes);
    }
  }
}

TEST(HierarchicalAllgather, ConcatenatesEveryInputInRankOrder) {
  for (const std::string& hosts : kLayouts) {
    for (const std::size_t n : {std::size_t{1}, std::size_t{3'001}}) {
      SCOPED_TRACE(hosts + " n=" + std::to_string(n));
      const int world = static_cast<int>(hosts.size());
      const auto outcomes =
          run_hosts(hosts, hierarchical_options(Algorithm::kRing, Topology::kHierarchical),
                    [&](Communicator& c, int r) {
                      const auto input = exact_input(n, r);
                      RankOutcome outcome;
                      outcome.values.assign(n * static_cast<std::size_t>(world), -1.0f);
                      outcome.result = c.allgather(input, outcome.values).wait();
                      return outcome;
                    });
      std::vector<float> expected;
      for (int r = 0; r < world; ++r) {
        const auto input = exact_input(n, r);
        expected.insert(expected.end(), input.begin(), input.end());
      }
      EXPECT_TRUE(bit_equal(outcomes[0].values, expected));
      expect_identical(outcomes);
    }
  }
}

// Reduce-scatter: rank r ends with the reduction of every rank's shard r.
std::vector<RankOutcome> reduce_scatter_by_host(const std::string& hosts, std::size_t n,
                                                const CollectiveOptions& call,
                                                bool in_place = false) {
  const int world = static_cast<int>(hosts.size());
  return run_hosts(hosts, hierarchical_options(Algorithm::kRing, Topology::kHierarchical),
                   [&](Communicator& c, int r) {
                     auto input = exact_input(n * static_cast<std::size_t>(world), r);
                     RankOutcome outcome;
                     if (in_place) {
                       // The output is the input's own shard r.
                       const auto output =
                           std::span<float>(input).subspan(static_cast<std::size_t>(r) * n, n);
                       outcome.result = c.reduce_scatter(input, output, call).wait();
                       outcome.values.assign(output.begin(), output.end());
                     } else {
                       outcome.values.assign(n, -1.0f);
                       outcome.result = c.reduce_scatter(input, outcome.values, call).wait();
                     }
                     return outcome;
                   });
}

TEST(HierarchicalReduceScatter, EveryShardSumsExactlyAtItsOwner) {
  for (const std::string& hosts : kLayouts) {
    for (const std::size_t n : {std::size_t{1}, std::size_t{2'003}}) {
      for (const bool in_place : {false, true}) {
        SCOPED_TRACE(hosts + " n=" + std::to_string(n) + (in_place ? " in place" : ""));
        const int world = static_cast<int>(hosts.size());
        const auto outcomes = reduce_scatter_by_host(hosts, n, {}, in_place);
        const auto sum = exact_sum(n * static_cast<std::size_t>(world), world);
        std::uint64_t expected = 0;
        for (int r = 0; r < world; ++r) {
          const auto& outcome = outcomes[static_cast<std::size_t>(r)];
          const std::vector<float> shard(sum.begin() + static_cast<std::ptrdiff_t>(r * n),
                                         sum.begin() + static_cast<std::ptrdiff_t>((r + 1) * n));
          EXPECT_TRUE(bit_equal(outcome.values, shard)) << "rank " << r;
          EXPECT_EQ(outcome.result.contributions_received, outcome.result.contributions_expected);
          expected += outcome.result.contributions_expected;
        }
        // Every shard is counted once, by the rank that finalized it, in workers.
        EXPECT_EQ(expected, n * static_cast<std::size_t>(world * world));
      }
    }
  }
}

TEST(HierarchicalReduceScatter, SixteenBitWireAndLossStayClose) {
  const std::string hosts = "aabbbc";
  const int world = static_cast<int>(hosts.size());
  const std::size_t n = 9'001;
  for (const WireDtype wire : {WireDtype::kBfloat16, WireDtype::kFloat16}) {
    SCOPED_TRACE(to_string(wire));
    const auto outcomes = reduce_scatter_by_host(hosts, n, {.wire = wire});
    const auto sum = exact_sum(n * static_cast<std::size_t>(world), world);
    for (int r = 0; r < world; ++r) {
      for (std::size_t i = 0; i < n; ++i) {
        const float exact = sum[static_cast<std::size_t>(r) * n + i];
        ASSERT_NEAR(outcomes[static_cast<std::size_t>(r)].values[i], exact,
                    0.02 * std::abs(exact) + 2.0)
            << r << " " << i;
      }
    }
  }
  // Loss between hosts, averaged without bias: each entry stays within its inputs' range.
  const auto outcomes = run_hosts(
      hosts, hierarchical_options(Algorithm::kRing, Topology::kHierarchical),
      [&](Communicator& c, int r) {
        const auto input = exact_input(n * static_cast<std::size_t>(world), r);
        RankOutcome outcome;
        outcome.values.assign(n, 0.0f);
        outcome.result =
            c.reduce_scatter(input, outcome.values, {.loss_budget = 0.05, .op = ReduceOp::kAverage})
                .wait();
        return outcome;
      },
      [&](CommunicatorOptions& mine, int rank) {
        auto& inject = mine.transport.inject;
        inject.source_drop_rate.assign(static_cast<std::size_t>(world), -1.0);
        for (int peer = 0; peer < world; ++peer) {
          if (hosts[static_cast<std::size_t>(peer)] != hosts[static_cast<std::size_t>(rank)]) {
            inject.source_drop_rate[static_cast<std::size_t>(peer)] = 0.03;
          }
        }
        inject.seed = 99 + static_cast<std::uint64_t>(rank);
      });
  std::uint64_t drops = 0;
  for (int r = 0; r < world; ++r) {
    const auto& outcome = outcomes[static_cast<std::size_t>(r)];
    drops += outcome.counters.injected_drops;
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t entry = static_cast<std::size_t>(r) * n + i;
      const float v = static_cast<float>(static_cast<int>(entry % 101) - 50);
      ASSERT_GE(outcome.values[i], std::min(v, v * static_cast<float>(world)) - 1e-3f)
          << r << " " << i;
      ASSERT_LE(outcome.values[i], std::max(v, v * static_cast<float>(world)) + 1e-3f)
          << r << " " << i;
    }
  }
  EXPECT_GT(drops, 0u);
}

// Within a "host" the ranks may also reach each other through shared memory (they do share this
// machine): every collective gives the same results over the local path.
TEST(HierarchicalCollectives, OverTheLocalPath) {
  const std::string hosts = "aabbb";
  const int world = static_cast<int>(hosts.size());
  const std::size_t n = 12'007;
  const auto outcomes = run_hosts(
      hosts, hierarchical_options(Algorithm::kTranspose, Topology::kAuto),
      [&](Communicator& c, int r) {
        RankOutcome outcome;
        outcome.values = exact_input(n, r);
        c.allreduce(outcome.values).wait();
        std::vector<float> shard(n);
        const auto input = exact_input(n * static_cast<std::size_t>(world), r);
        c.reduce_scatter(input, shard).wait();
        std::vector<float> gathered(n * static_cast<std::size_t>(world));
        c.allgather(shard, gathered).wait();
        auto root_values = exact_input(n, r);
        c.broadcast(root_values, 3).wait();
        outcome.values.insert(outcome.values.end(), gathered.begin(), gathered.end());
        outcome.values.insert(outcome.values.end(), root_values.begin(), root_values.end());
        outcome.counters = c.counters();
        return outcome;
      },
      [](CommunicatorOptions& mine, int) { mine.transport.local_path = true; });
  expect_identical(outcomes);
  auto expected = exact_sum(n, world);
  const auto all = exact_sum(n * static_cast<std::size_t>(world), world);
  expected.insert(expected.end(), all.begin(), all.end());
  const auto root = exact_input(n, 3);
  expected.insert(expected.end(), root.begin(), root.end());
  EXPECT_TRUE(bit_equal(outcomes[0].values, expected));
  EXPECT_GT(outcomes[0].counters.local_messages_sent, 0u);
}

// Who sends how much tells the topology apart: with three workers on one host and one on
// another (one stripe), a non-leader sends its buffer once to its leader (n values) when
// hierarchical, and 2 (W-1)/W n = 1.5 n values around a flat ring.
TEST(HierarchicalTopology, AutoFollowsTheHostsAndFlatOverrides) {
  const std::size_t n = 100'000;
  const auto sent_by_rank_1 = [&](const std::string& hosts, Topology topology) {
    const auto outcomes = run_hosts(hosts, hierarchical_options(Algorithm::kRing, topology),
                                    [&](Communicator& c, int r) {
                                      RankOutcome outcome;
                                      outcome.values = exact_input(n, r);
                                      outcome.result = c.allreduce(outcome.values).wait();
                                      return outcome;
                                    });
    // Less what recovery rounds resent: a slow run (sanitizers) may resend, the topology not.
    const auto& counters = outcomes[1].counters;
    return static_cast<double>(counters.bytes_sent - counters.bytes_retransmitted) /
           static_cast<double>(n * sizeof(float));
  };
  EXPECT_LT(sent_by_rank_1("aaab", Topology::kAuto), 1.2);
  EXPECT_GT(sent_by_rank_1("aaab", Topology::kFlat), 1.4);
  EXPECT_GT(sent_by_rank_1("aaaa", Topology::kAuto), 1.4);  // one host: flat
  EXPECT_GT(sent_by_rank_1("abcd", Topology::kAuto), 1.4);  // no host shared: flat
}

TEST(HierarchicalTopology, PerCallOptionOverridesTheCommunicator) {
  const std::size_t n = 20'000;
  const auto outcomes = run_hosts(
      "aaab", hierarchical_options(Algorithm::kRing, Topology::kHierarchical),
      [&](Communicator& c, int r) {
        RankOutcome outcome;
        outcome.values = exact_input(n, r);
        outcome.result = c.allreduce(outcome.values, {.topology = Topology::kFlat}).wait();
        return outcome;
      });
  EXPECT_TRUE(bit_equal(outcomes[0].values, exact_sum(n, 4)));
  EXPECT_GT(static_cast<double>(outcomes[1].counters.bytes_sent) / (n * sizeof(float)), 1.4);
}

TEST(HierarchicalTopology, ParsesAndParameterServerModeAccepts) {
  CommunicatorOptions options = communicator_options(Algorithm::kParameterServer, 1);
  options.topology = Topology::kHierarchical;
  options.validate(3);  // collectives_hierarchical_ps_test.cpp runs it
  EXPECT_EQ(parse_topology("hier"), Topology::kHierarchical);
  EXPECT_EQ(std::string(to_string(Topology::kFlat)), "flat");
  expect_refused([] { parse_topology("tree"); }, "unknown topology");
}

}  // namespace
}  // namespace dlcp::test
