// The MPI baseline against real Open MPI: mpirun_command() starts the probe program
// (mpi_allreduce_probe.cpp) on local ranks, forced onto TCP, and the probe checks exact sums.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "baseline_mpi.hpp"
#include "dlcp/error.hpp"

#ifndef DLCP_MPI_PROBE_PATH
#error "DLCP_MPI_PROBE_PATH must name the mpi_allreduce_probe executable"
#endif

namespace dlcp::test {
namespace {

struct Finished {
  int exit_status = -1;
  std::string output;  // stdout and stderr together
};

std::string shell_quoted(const std::string& word) {
  std::string quoted = "'";
  for (char c : word) {
    if (c == '\'') {
      quoted += "'\\''";
    } else {
      quoted += c;
    }
  }
  return quoted + "'";
}

Finished run_command(const std::vector<std::string>& words) {
  std::string line;
  for (const auto& word : words) line += shell_quoted(word) + " ";
  line += "2>&1";
  Finished finished;
  FILE* pipe = popen(line.c_str(), "r");
  if (pipe == nullptr) return finished;
  std::array<char, 4096> chunk{};
  while (std::fgets(chunk.data(), static_cast<int>(chunk.size()), pipe) != nullptr) {
    finished.output += chunk.data();
  }
  const int status = pclose(pipe);
  finished.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return finished;
}

std::vector<std::string> probe_command(int ranks, const std::vector<std::string>& extra_mca) {
  auto command = tools::mpirun_command(ranks, {"DLCP_PROBE_MARKER"});
  command.insert(command.end(), extra_mca.begin(), extra_mca.end());
  command.push_back(DLCP_MPI_PROBE_PATH);
  return command;
}

// Whether `key` is followed by `value` somewhere in `command`.
bool has_argument_pair(const std::vector<std::string>& command, const std::string& key,
                       const std::string& value) {
  for (std::size_t i = 0; i + 1 < command.size(); ++i) {
    if (command[i] == key && command[i + 1] == value) return true;
  }
  return false;
}

TEST(MpiBaseline, CommandForcesTcpAndPassesEnvironment) {
  const auto command = tools::mpirun_command(3, {"A", "B"});
  auto has_pair = [&](const std::string& key, const std::string& value) {
    return has_argument_pair(command, key, value);
  };
  EXPECT_TRUE(has_pair("-np", "3"));
  EXPECT_TRUE(has_pair("pml", "ob1"));
  EXPECT_TRUE(has_pair("btl", "tcp,self"));
  EXPECT_TRUE(has_pair("btl_tcp_if_include", "lo"));
  EXPECT_TRUE(has_pair("-x", "A"));
  EXPECT_TRUE(has_pair("-x", "B"));
  EXPECT_NE(std::find(command.begin(), command.end(), "--allow-run-as-root"), command.end());
}

TEST(MpiBaseline, TwoRanksSumExactly) {
  ::setenv("DLCP_PROBE_MARKER", "passed-through", 1);
  const auto finished = run_command(probe_command(2, {}));
  ::unsetenv("DLCP_PROBE_MARKER");
  EXPECT_EQ(finished.exit_status, 0) << finished.output;
  EXPECT_NE(finished.output.find("marker passed-through"), std::string::npos) << finished.output;
  for (const char* line :
       {"size 2 length 1 exact", "size 2 length 1000 exact", "size 2 length 1048579 exact"}) {
    EXPECT_NE(finished.output.find(line), std::string::npos) << line << "\n" << finished.output;
  }
}

TEST(MpiBaseline, ThreeRanksOnTwoCoresSumExactly) {
  const auto finished = run_command(probe_command(3, {}));
  EXPECT_EQ(finished.exit_status, 0) << finished.output;
  EXPECT_NE(finished.output.find("size 3 length 1048579 exact"), std::string::npos)
      << finished.output;
}

// Open MPI's own log of which transport carries each peer's messages: tcp, never vader (its
// shared-memory btl).
TEST(MpiBaseline, RanksTalkOverTcpNotSharedMemory) {
  const auto finished = run_command(probe_command(2, {"--mca", "btl_base_verbose", "100"}));
  ASSERT_EQ(finished.exit_status, 0) << finished.output;
  EXPECT_NE(finished.output.find("Using tcp btl"), std::string::npos) << finished.output;
  EXPECT_EQ(finished.output.find("Using vader btl"), std::string::npos) << finished.output;
  EXPECT_EQ(finished.output.find("Using sm btl"), std::string::npos) << finished.output;
}

// The shared-memory baseline (`dlcp bench allreduce --algo mpi-shm`): vader carries the
// messages, and the sums are as exact as over TCP.
TEST(MpiBaseline, SharedMemoryRanksSumExactlyOverVader) {
  auto command = tools::mpirun_command(3, {}, nullptr, tools::MpiFabric::kSharedMemory);
  for (const char* word : {"--mca", "btl_base_verbose", "100", DLCP_MPI_PROBE_PATH}) {
    command.push_back(word);
  }
  const auto finished = run_command(command);
  ASSERT_EQ(finished.exit_status, 0) << finished.output;
  EXPECT_NE(finished.output.find("size 3 length 1048579 exact"), std::string::npos)
      << finished.output;
  EXPECT_NE(finished.output.find("Using vader btl"), std::string::npos) << finished.output;
  EXPECT_EQ(finished.output.find("Using tcp btl"), std::string::npos) << finished.output;
}

TEST(MpiBaseline, SharedMemorySpansOneHostOnly) {
  const tools::MpiHosts hosts{{"10.0.0.1", "10.0.0.2"}, "agent", "10.0.0.0/24"};
  EXPECT_THROW(tools::mpirun_command(2, {}, &hosts, tools::MpiFabric::kSharedMemory), dlcp::Error);
}

// Hosts of several ranks each (the testbed's --ranks-per-host): TCP between hosts on their
// subnet, shared memory within one, as Open MPI runs by default.
TEST(MpiBaseline, TcpBetweenHostsAndSharedMemoryWithinOne) {
  const tools::MpiHosts hosts{
      {"10.0.0.1", "10.0.0.1", "10.0.0.2", "10.0.0.2"}, "agent", "10.0.0.0/24"};
  const auto command = tools::mpirun_command(4, {}, &hosts, tools::MpiFabric::kTcpAndSharedMemory);
  auto has_pair = [&](const std::string& key, const std::string& value) {
    return has_argument_pair(command, key, value);
  };
  EXPECT_TRUE(has_pair("btl", "tcp,vader,self"));
  EXPECT_TRUE(has_pair("btl_tcp_if_include", "10.0.0.0/24"));
  EXPECT_TRUE(has_pair("--host", "10.0.0.1,10.0.0.1,10.0.0.2,10.0.0.2"));
  EXPECT_FALSE(has_pair("coll", "^sm,han"));
  EXPECT_THROW(tools::mpirun_command(2, {}, nullptr, tools::MpiFabric::kTcpAndSharedMemory),
               dlcp::Error);
}

TEST(MpiBaseline, TestProcessIsNotUnderMpirun) {
  // gtest runs this binary directly (ctest or by hand); the probe is what mpirun starts.
  if (std::getenv("OMPI_COMM_WORLD_RANK") != nullptr) GTEST_SKIP() << "running under mpirun";
  EXPECT_FALSE(tools::MpiSession::launched_by_mpirun());
}

}  // namespace
}  // namespace dlcp::test
