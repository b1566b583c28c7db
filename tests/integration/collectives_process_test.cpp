// Ranks as separate processes: through `dlcp bench allreduce` (real processes, a TCP store) for
// every implementation, and a rank killed mid-collective.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "collectives_fixture.hpp"
#include "forked_ranks.hpp"

namespace dlcp::test {
namespace {

// Runs a command and returns its stdout's last line and its exit status.
std::pair<std::string, int> run_command(const std::string& command) {
  std::array<char, 4096> buffer{};
  std::string output;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return {"", -1};
  while (std::fgets(buffer.data(), buffer.size(), pipe) != nullptr) output += buffer.data();
  const int status = ::pclose(pipe);
  const auto end = output.find_last_not_of('\n');
  const auto start = output.rfind('\n', end);
  return {
      output.substr(
          start == std::string::npos ? 0 : start + 1,
          end == std::string::npos ? 0 : end - (start == std::string::npos ? 0 : start + 1) + 1),
      WIFEXITED(status) ? WEXITSTATUS(status) : -1};
}

class BenchProcesses : public testing::TestWithParam<std::string> {};

TEST_P(BenchProcesses, ExactAndConsistentAcrossProcesses) {
  const std::string algo = GetParam();
  const std::string command = std::string(DLCP_CLI_PATH) + " bench allreduce --algo " + algo +
                              " --ranks 3 --servers 2 --mib 1 --iters 3 --warmup 1 --json 2>&1";
  const auto [last_line, status] = run_command(command);
  ASSERT_EQ(status, 0) << last_line;
  const auto summary = nlohmann::json::parse(last_line);
  EXPECT_EQ(summary["algo"], algo);
  EXPECT_EQ(summary["ranks"], 3);
  EXPECT_EQ(summary["bytes"], 1 << 20);
  EXPECT_TRUE(summary["consistent"].get<bool>());
  EXPECT_EQ(summary["max_rel_error"].get<double>(), 0.0);
  EXPECT_EQ(summary["delivered_fraction"].get<double>(), 1.0);
  EXPECT_GT(summary["algbw_gbps"].get<double>(), 0.0);
  EXPECT_LE(summary["p50_ms"].get<double>(), summary["p99_ms"].get<double>());
}

INSTANTIATE_TEST_SUITE_P(Implementations, BenchProcesses,
                         testing::Values("ring", "tar", "ps", "gloo", "mpi"));

TEST(BenchProcesses, LossyRunReportsConsistentBoundedError) {
  const auto [last_line, status] =
      run_command(std::string(DLCP_CLI_PATH) +
                  " bench allreduce --algo tar --ranks 4 --mib 2 --iters 3 --warmup 1 --mtu 1500 "
                  "--drop 0.02 --loss-bound 0.05 --json 2>&1");
  ASSERT_EQ(status, 0) << last_line;
  const auto summary = nlohmann::json::parse(last_line);
  EXPECT_TRUE(summary["consistent"].get<bool>());
  EXPECT_LT(summary["delivered_fraction"].get<double>(), 1.0);
  EXPECT_GT(summary["delivered_fraction"].get<double>(), 0.9);
  EXPECT_GT(summary["max_rel_error"].get<double>(), 0.0);
}

TEST(BenchProcesses, ReduceScatterChecksEachRanksShard) {
  const auto [last_line, status] =
      run_command(std::string(DLCP_CLI_PATH) +
                  " bench allreduce --collective reduce_scatter --ranks 3 --mib 1 --iters 3 "
                  "--warmup 1 --json 2>&1");
  ASSERT_EQ(status, 0) << last_line;
  const auto summary = nlohmann::json::parse(last_line);
  EXPECT_EQ(summary["collective"], "reduce_scatter");
  EXPECT_EQ(summary["algo"], "tar");
  EXPECT_EQ(summary["bytes"], (1 << 20) / 12 * 12);  // whole shards of 3 ranks
  EXPECT_FALSE(summary.contains("consistent"));      // one shard per rank: nothing to compare
  EXPECT_EQ(summary["max_rel_error"].get<double>(), 0.0);
  EXPECT_EQ(summary["delivered_fraction"].get<double>(), 1.0);
  EXPECT_GT(summary["algbw_gbps"].get<double>(), 0.0);
}

TEST(BenchProcesses, ImpossibleOptionsFailLoudly) {
  const auto [last_line, status] = run_command(
      std::string(DLCP_CLI_PATH) + " bench allreduce --algo gloo --drop 0.1 --mib 1 2>&1");
  EXPECT_NE(status, 0);
  EXPECT_NE(last_line.find("dlcp only"), std::string::npos) << last_line;
}

// Four ranks as forked processes over a file store; rank 2 is killed while they all-reduce. The
// others must fail, naming rank 2, long before their 20 s transfer deadline.
TEST(KilledRank, SurvivorsFailFastNamingTheDeadRank) {
  constexpr int kWorld = 4;
  constexpr int kVictim = 2;
  const auto dir =
      std::filesystem::temp_directory_path() / ("dlcp-kill-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::vector<pid_t> children = fork_ranks(kWorld, dir, [&](int rank) {
    FileStore store((dir / "store").string());
    auto options = communicator_options(Algorithm::kRing);
    options.store_prefix = "kill";
    auto comm = Communicator::create(store, rank, kWorld, options);
    mark_rank_ready(dir, rank);
    std::vector<float> values(1 << 20, 1.0f);
    for (;;) comm->allreduce(values, {.deadline = std::chrono::seconds(20)}).wait();
  });
  // Let them run collectives, then kill one mid-flight.
  const auto started = std::chrono::steady_clock::now();
  while (!all_ranks_ready(dir, kWorld) &&
         std::chrono::steady_clock::now() - started < std::chrono::seconds(20)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(all_ranks_ready(dir, kWorld));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ::kill(children[kVictim], SIGKILL);
  const auto killed = std::chrono::steady_clock::now();
  for (int rank = 0; rank < kWorld; ++rank) {
    int status = 0;
    ::waitpid(children[static_cast<std::size_t>(rank)], &status, 0);
    if (rank == kVictim) continue;
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();
    EXPECT_LT(seconds, 10.0) << "rank " << rank << " took too long to notice";
    ASSERT_TRUE(WIFEXITED(status)) << rank;
    EXPECT_EQ(WEXITSTATUS(status), kRankFailedWithError) << "rank " << rank;
    const RankReport report = read_rank_report(dir, rank);
    EXPECT_NE(report.what.find("rank 2"), std::string::npos)
        << "rank " << rank << ": " << report.what;
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace dlcp::test
