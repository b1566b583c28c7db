// Ranks as forked processes that share a directory: each child runs the test's body and leaves
// what a parent needs to check behind as files (readiness, and the error that ended it).
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "dlcp/error.hpp"

namespace dlcp::test {

// Exit codes of a rank process.
inline constexpr int kRankFailedWithError = 3;  // a dlcp::Error, reported in error<rank>
inline constexpr int kRankFailedOtherwise = 4;

// Forks one process per rank; each runs body(rank) and exits 0 when it returns. A dlcp::Error
// writes "<steady-clock ns> <what>" to dir/error<rank> and exits kRankFailedWithError; any other
// exception exits kRankFailedOtherwise. The body may also _exit with codes of its own.
inline std::vector<pid_t> fork_ranks(int world, const std::filesystem::path& dir,
                                     const std::function<void(int rank)>& body) {
  std::vector<pid_t> children;
  for (int rank = 0; rank < world; ++rank) {
    const pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error("fork failed for rank " + std::to_string(rank));
    if (pid > 0) {
      children.push_back(pid);
      continue;
    }
    int code = 0;
    try {
      body(rank);
    } catch (const Error& e) {
      std::ofstream out((dir / ("error" + std::to_string(rank))).string());
      out << std::chrono::steady_clock::now().time_since_epoch().count() << ' ' << e.what();
      code = kRankFailedWithError;
    } catch (...) {
      code = kRankFailedOtherwise;
    }
    ::_exit(code);  // skip the parent's test framework and static destructors
  }
  return children;
}

// Called by a rank once it is under way; all_ranks_ready tells the parent.
inline void mark_rank_ready(const std::filesystem::path& dir, int rank) {
  std::ofstream((dir / ("ready" + std::to_string(rank))).string()) << "ready";
}

inline bool all_ranks_ready(const std::filesystem::path& dir, int world) {
  for (int rank = 0; rank < world; ++rank) {
    if (!std::filesystem::exists(dir / ("ready" + std::to_string(rank)))) return false;
  }
  return true;
}

struct RankReport {
  bool failed = false;       // the rank wrote an error
  std::int64_t when_ns = 0;  // steady clock, shared by every process of the machine
  std::string what;
};

inline RankReport read_rank_report(const std::filesystem::path& dir, int rank) {
  RankReport report;
  std::ifstream in(dir / ("error" + std::to_string(rank)));
  if (!(in >> report.when_ns)) return report;
  report.failed = true;
  in.get();
  std::getline(in, report.what, '\0');
  return report;
}

}  // namespace dlcp::test
