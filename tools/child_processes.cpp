#include "child_processes.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <thread>

#include "dlcp/error.hpp"

namespace dlcp::tools {

ChildProcesses::~ChildProcesses() {
  kill_all();
}

void ChildProcesses::start(const std::vector<std::string>& argv,
                           const std::vector<std::pair<std::string, std::string>>& env,
                           std::string label) {
  // Everything the child needs is prepared before fork: only async-signal-safe calls after it.
  std::vector<char*> args;
  for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  std::vector<std::string> environment;
  for (char** e = environ; *e != nullptr; ++e) environment.emplace_back(*e);
  for (const auto& [name, value] : env) environment.push_back(name + "=" + value);
  std::vector<char*> envp;
  for (auto& entry : environment) envp.push_back(entry.data());
  envp.push_back(nullptr);

  const pid_t pid = ::fork();
  if (pid < 0) {
    throw Error(ErrorCode::kSystem, -1, "fork for " + label + ": " + std::strerror(errno));
  }
  if (pid == 0) {
    ::execve(args[0], args.data(), envp.data());
    _exit(127);
  }
  children_.push_back({pid, std::move(label)});
}

std::string ChildProcesses::wait_all(std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string failure;
  std::size_t running = children_.size();
  while (running > 0) {
    bool reaped = false;
    for (auto& child : children_) {
      if (child.pid < 0) continue;
      int status = 0;
      const pid_t done = ::waitpid(child.pid, &status, WNOHANG);
      if (done != child.pid) continue;
      child.pid = -1;
      --running;
      reaped = true;
      if (WIFEXITED(status) && WEXITSTATUS(status) == 0) continue;
      if (failure.empty()) {
        failure = child.label + (WIFEXITED(status)
                                     ? " exited with status " + std::to_string(WEXITSTATUS(status))
                                     : " was killed by signal " + std::to_string(WTERMSIG(status)));
      }
    }
    if (!failure.empty()) {
      kill_all();
      return failure;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      kill_all();
      return "timed out after " + std::to_string(timeout.count()) + " s";
    }
    if (!reaped) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return failure;
}

void ChildProcesses::kill_all() {
  // SIGTERM first: a launcher such as mpirun then takes its own children down with it.
  for (const auto& child : children_) {
    if (child.pid >= 0) ::kill(child.pid, SIGTERM);
  }
  const auto grace = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  for (auto& child : children_) {
    if (child.pid < 0) continue;
    int status = 0;
    while (::waitpid(child.pid, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > grace) {
        ::kill(child.pid, SIGKILL);
        ::waitpid(child.pid, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    child.pid = -1;
  }
}

std::string self_executable() {
  return std::filesystem::read_symlink("/proc/self/exe").string();
}

std::string bench_executable() {
  const auto path = std::filesystem::path(self_executable()).parent_path() / "dlcp-bench";
  if (!std::filesystem::exists(path)) {
    throw std::runtime_error("the benchmark command " + path.string() +
                             " is missing; it is built and installed beside dlcp");
  }
  return path.string();
}

}  // namespace dlcp::tools
