#include "background.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>
#include <thread>

#include "command.hpp"
#include "common/invalid_option.hpp"
#include "topology.hpp"

namespace dlcp::testbed {

namespace {
constexpr int kFirstPort = 5301;
}

void BackgroundOptions::validate() const {
  if (tcp_flows_per_host < 0 || tcp_flows_per_host > 8) {
    invalid_option("BackgroundOptions.tcp_flows_per_host", "must be 0..8", tcp_flows_per_host);
  }
  if (!(tcp_share >= 0 && tcp_share <= 1)) {
    invalid_option("BackgroundOptions.tcp_share", "must be within [0, 1]", tcp_share);
  }
  if (!(udp_share >= 0 && udp_share <= 1)) {
    invalid_option("BackgroundOptions.udp_share", "must be within [0, 1]", udp_share);
  }
}

std::vector<BackgroundFlow> background_flows(const TestbedOptions& testbed,
                                             const BackgroundOptions& options) {
  options.validate();
  std::vector<BackgroundFlow> flows;
  int port = kFirstPort;
  const int half = testbed.hosts / 2;
  for (int h = 0; h < testbed.hosts; ++h) {
    for (int f = 0; f < options.tcp_flows_per_host; ++f) {
      flows.push_back({h, (h + half) % testbed.hosts, false,
                       options.tcp_share * testbed.port.rate_bps, port++});
    }
  }
  if (options.udp_share > 0) {
    flows.push_back({0, 1, true, options.udp_share * testbed.port.rate_bps, port++});
  }
  return flows;
}

BackgroundTraffic::BackgroundTraffic(const TestbedOptions& testbed,
                                     const BackgroundOptions& options)
    : flows_(background_flows(testbed, options)) {
  if (flows_.empty()) return;
  if (find_program("iperf3").empty()) {
    throw std::runtime_error("background traffic needs iperf3 (Debian package iperf3)");
  }
  for (const auto& flow : flows_) {
    pids_.push_back(
        spawn(host_namespace(testbed, flow.to),
              {"iperf3", "-s", "-p", std::to_string(flow.port), "-B", host_address(flow.to)}));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  for (const auto& flow : flows_) {
    std::vector<std::string> argv = {"iperf3",
                                     "-c",
                                     host_address(flow.to),
                                     "-p",
                                     std::to_string(flow.port),
                                     "-B",
                                     host_address(flow.from),
                                     "-t",
                                     "86400"};
    if (flow.udp) argv.insert(argv.end(), {"-u", "-l", "8000"});
    // iperf3 reads -b 0 as "unlimited" for TCP.
    argv.insert(argv.end(), {"-b", std::to_string(static_cast<long long>(flow.rate_bps))});
    pids_.push_back(spawn(host_namespace(testbed, flow.from), argv));
  }
  // A client that cannot connect exits at once; catch that here rather than run without load.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  for (const pid_t pid : pids_) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      throw std::runtime_error("an iperf3 background flow exited at start (status " +
                               std::to_string(WEXITSTATUS(status)) + ")");
    }
  }
}

BackgroundTraffic::~BackgroundTraffic() {
  for (const pid_t pid : pids_) ::kill(pid, SIGKILL);
  for (const pid_t pid : pids_) ::waitpid(pid, nullptr, 0);
}

pid_t BackgroundTraffic::spawn(const std::string& ns, const std::vector<std::string>& argv) {
  std::vector<std::string> full = {find_program("ip"), "netns", "exec", ns};
  full.push_back(find_program(argv[0]));
  full.insert(full.end(), argv.begin() + 1, argv.end());
  std::vector<char*> args;
  for (auto& arg : full) args.push_back(arg.data());
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork for background traffic failed");
  if (pid == 0) {
    const int null = ::open("/dev/null", O_RDWR);
    ::dup2(null, 0);
    ::dup2(null, 1);
    ::dup2(null, 2);
    ::execv(args[0], args.data());
    _exit(127);
  }
  return pid;
}

}  // namespace dlcp::testbed
