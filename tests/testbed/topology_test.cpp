// Where the testbed places a job's processes (testbed::host_of_process), on fixed inputs.
#include "topology.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace dlcp::testbed {
namespace {

std::vector<int> hosts_of(int processes, int workers, int hosts) {
  std::vector<int> placed;
  for (int process = 0; process < processes; ++process) {
    placed.push_back(host_of_process(process, workers, hosts));
  }
  return placed;
}

TEST(HostOfProcess, OneWorkerPerHostThenOneServerPerHost) {
  EXPECT_EQ(hosts_of(8, 4, 4), (std::vector<int>{0, 1, 2, 3, 0, 1, 2, 3}));
}

TEST(HostOfProcess, FewerWorkersThanHostsTakeTheFirstHosts) {
  EXPECT_EQ(hosts_of(3, 3, 4), (std::vector<int>{0, 1, 2}));
}

TEST(HostOfProcess, SeveralWorkersPerHostInConsecutiveBlocks) {
  // 4 hosts x 2 workers, then 4 servers.
  EXPECT_EQ(hosts_of(12, 8, 4), (std::vector<int>{0, 0, 1, 1, 2, 2, 3, 3, 0, 1, 2, 3}));
  // An uneven split keeps the blocks consecutive and every host in use.
  EXPECT_EQ(hosts_of(6, 6, 4), (std::vector<int>{0, 0, 1, 2, 2, 3}));
}

}  // namespace
}  // namespace dlcp::testbed
