// Local rank processes for benchmarks: start them, wait for all, and make sure none outlives a
// failure of another (a stuck rank would otherwise hang the benchmark).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace dlcp::tools {

class ChildProcesses {
 public:
  ChildProcesses() = default;
  ChildProcesses(const ChildProcesses&) = delete;
  ChildProcesses& operator=(const ChildProcesses&) = delete;
  ~ChildProcesses();  // kills whatever still runs

  // Starts argv[0] (a path) with argv and the current environment plus `env` (NAME, value).
  // Throws dlcp::Error(kSystem) when it cannot.
  void start(const std::vector<std::string>& argv,
             const std::vector<std::pair<std::string, std::string>>& env, std::string label);

  // Waits for every child. The first failure (non-zero exit or signal) or the timeout kills the
  // rest; returns "" when all exited 0, otherwise what went wrong, naming the child.
  std::string wait_all(std::chrono::seconds timeout);

 private:
  struct Child {
    pid_t pid = -1;
    std::string label;
  };
  void kill_all();
  std::vector<Child> children_;
};

// Path of the running executable (/proc/self/exe).
std::string self_executable();

// The benchmark command beside the running one (dlcp-bench in the same directory, as the build
// and `cmake --install` place them): the demo and the benchmarks start their ranks with it.
// Throws std::runtime_error naming the path when it is absent.
std::string bench_executable();

}  // namespace dlcp::tools
