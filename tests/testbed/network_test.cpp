// The real testbed, as root: it comes up and goes down without leftovers, refuses what it does not
// own, cleans up after a killed owner, and its queues, precedence and gray failure act on real
// traffic as configured. Skipped (with the reason) where the testbed cannot be built.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <sstream>
#include <thread>
#include <vector>

#include "background.hpp"
#include "root_testbed_fixture.hpp"
#include "switch_counters.hpp"
#include "testbed.hpp"
#include "topology.hpp"

namespace dlcp::testbed {
namespace {

// A UDP flow sent from inside a namespace at a steady rate, with no connection that loss could
// break (unlike iperf3's control channel). A sender that was starved of CPU skips the slots it
// missed instead of sending them in one burst, as iperf3 does to restore its average rate: such
// a burst overflows even a strict-priority queue, and made the priority test fail on a busy
// machine (five 100 ms stalls of the urgent iperf3 sender cost it 16-18% of its packets).
struct PacedUdp {
  std::string destination;
  int packets = 0;  // slots at `mbit`; the flow lasts packets / rate
  int payload_bytes = 1000;
  double mbit = 160;
  int tos = 0;
};

pid_t start_paced_udp(const std::string& ns, const PacedUdp& flow) {
  // Allocated before the fork: the child of a threaded process should not allocate.
  const std::string ns_path = "/run/netns/" + ns;
  const std::vector<char> payload(static_cast<std::size_t>(flow.payload_bytes));
  const pid_t child = ::fork();
  if (child != 0) return child;
  const int ns_fd = ::open(ns_path.c_str(), O_RDONLY);
  if (ns_fd < 0 || ::setns(ns_fd, CLONE_NEWNET) != 0) _exit(2);
  const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  if (fd < 0 || ::setsockopt(fd, IPPROTO_IP, IP_TOS, &flow.tos, sizeof flow.tos) != 0) _exit(3);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(9);  // discard
  if (::inet_pton(AF_INET, flow.destination.c_str(), &to.sin_addr) != 1) _exit(4);
  const double per_second = flow.mbit * 1e6 / 8 / flow.payload_bytes;
  // Catches up at most 128 KB (3.4 ms of slots at 300 Mbit/s): a scheduler's usual delays, in a
  // burst that fits in half a protected queue's buffer.
  const int max_batch = std::max(1, 128'000 / flow.payload_bytes);
  const auto start = std::chrono::steady_clock::now();
  for (int next = 0; next < flow.packets;) {
    const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
    const int due = std::min(flow.packets, static_cast<int>(elapsed.count() * per_second) + 1);
    next = std::max(next, due - max_batch);  // skip the slots of a longer stall
    for (; next < due; ++next) {
      if (::sendto(fd, payload.data(), payload.size(), 0, reinterpret_cast<sockaddr*>(&to),
                   sizeof to) < 0 &&
          errno != ENOBUFS) {
        _exit(5);
      }
    }
    ::usleep(100);
  }
  _exit(0);
}

// Whether a sender started above ran to its end.
bool sender_finished(pid_t child) {
  int status = 0;
  return child > 0 && ::waitpid(child, &status, 0) == child && WIFEXITED(status) &&
         WEXITSTATUS(status) == 0;
}

void send_udp_from(const std::string& ns, const std::string& destination, int count) {
  EXPECT_TRUE(sender_finished(start_paced_udp(ns, {.destination = destination, .packets = count})));
}

class Network : public RootTestbedTest {
 protected:
  void SetUp() override {
    prepare("dlcpt", "iperf3");
    options_.hosts = 3;
  }

  void server(int host, int port) {
    run_checked(runner_, {"ip", "netns", "exec", host_namespace(options_, host), "iperf3", "-s",
                          "-D", "-p", std::to_string(port)});
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  // Two paced 300 Mbit/s UDP flows of 8000-byte datagrams from hosts 0 and 1 into host 2's
  // 400 Mbit/s port on spine 0 for 3 s, with the given TOS bytes; returns that port's queue
  // counters.
  std::vector<QueueStats> overload_port(const Testbed& testbed, int first_tos, int second_tos) {
    PacedUdp flow{
        .destination = spine_address(2, 0), .packets = 14'000, .payload_bytes = 8000, .mbit = 300};
    flow.tos = first_tos;
    const pid_t first = start_paced_udp(host_namespace(options_, 0), flow);
    flow.tos = second_tos;
    const pid_t second = start_paced_udp(host_namespace(options_, 1), flow);
    EXPECT_TRUE(sender_finished(first));
    EXPECT_TRUE(sender_finished(second));
    return testbed.port_stats(0, 2);
  }
  const QueueStats& queue(const std::vector<QueueStats>& stats, const std::string& classid) {
    for (const auto& q : stats) {
      if (q.classid == classid) return q;
    }
    throw std::runtime_error("no queue " + classid);
  }
};

TEST_F(Network, ComesUpAndGoesDownWithoutLeftovers) {
  {
    Testbed testbed(runner_, options_);
    EXPECT_EQ(namespaces().size(), 5u);
    EXPECT_TRUE(std::filesystem::exists(state_file(options_.prefix)));
    // Host addresses reach each other over the fabric (TCP through ECMP).
    server(1, 5999);
    const auto out =
        run_checked(runner_, {"ip", "netns", "exec", host_namespace(options_, 0), "iperf3", "-c",
                              host_address(1), "-p", "5999", "-n", "1M"});
    EXPECT_NE(out.find("receiver"), std::string::npos);
  }
  EXPECT_TRUE(namespaces().empty());
  EXPECT_FALSE(std::filesystem::exists(state_file(options_.prefix)));
}

TEST_F(Network, RefusesNamespacesItDidNotCreate) {
  run_checked(runner_, {"ip", "netns", "add", host_namespace(options_, 1)});
  try {
    Testbed testbed(runner_, options_);
    FAIL() << "built over a foreign namespace";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("not created by dlcp"), std::string::npos) << e.what();
  }
  // The foreign namespace is untouched, and nothing else was created.
  EXPECT_EQ(namespaces(), std::vector<std::string>{host_namespace(options_, 1)});
  run_checked(runner_, {"ip", "netns", "del", host_namespace(options_, 1)});
}

TEST_F(Network, GuardRemovesEverythingWhenTheOwnerIsKilled) {
  const pid_t owner = ::fork();
  ASSERT_GE(owner, 0);
  if (owner == 0) {
    SystemCommands runner;
    Testbed testbed(runner, options_);
    ::pause();
    _exit(0);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (namespaces().size() < 5 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(namespaces().size(), 5u);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // let it finish building
  ::kill(owner, SIGKILL);
  ::waitpid(owner, nullptr, 0);
  while ((!namespaces().empty() || std::filesystem::exists(state_file(options_.prefix))) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(namespaces().empty());
  EXPECT_FALSE(std::filesystem::exists(state_file(options_.prefix)));
}

TEST_F(Network, StrictPriorityAtTheSwitchEgress) {
  Testbed testbed(runner_, options_);
  // Class 0 (TOS 0xe8, DSCP 58) against best effort (TOS 0).
  const auto stats = overload_port(testbed, 0xe8, 0);
  const QueueStats& high = queue(stats, "1:10");
  const QueueStats& low = queue(stats, "1:80");
  ASSERT_GT(high.packets + high.drops, 10000u);
  const double high_loss =
      static_cast<double>(high.drops) / static_cast<double>(high.packets + high.drops);
  const double low_loss =
      static_cast<double>(low.drops) / static_cast<double>(low.packets + low.drops);
  // Offered 600 into 400: strict priority puts the whole deficit on best effort (without it both
  // would lose a third). The margin allows for the emulated switch being starved of CPU a while.
  EXPECT_LT(high_loss, 0.1) << high.drops << " of " << high.packets + high.drops;
  EXPECT_GT(low_loss, high_loss + 0.25) << "urgent " << high_loss << ", best effort " << low_loss;
  // Not twice best effort's share: a sender stalled by a busy machine offers less than its rate.
  EXPECT_GT(high.bytes, low.bytes);
}

TEST_F(Network, DropEligiblePacketsGoFirst) {
  Testbed testbed(runner_, options_);
  // Same class (3): drop-eligible (DSCP 38, TOS 0x98) against protected (DSCP 34, TOS 0x88).
  const auto stats = overload_port(testbed, 0x98, 0x88);
  const QueueStats& kept = queue(stats, "1:40");
  const QueueStats& dropped_first = queue(stats, "1:41");
  ASSERT_GT(kept.packets, 1000u);
  ASSERT_GT(dropped_first.packets + dropped_first.drops, 1000u);
  const double kept_loss =
      static_cast<double>(kept.drops) / static_cast<double>(kept.packets + kept.drops);
  const double eligible_loss = static_cast<double>(dropped_first.drops) /
                               static_cast<double>(dropped_first.packets + dropped_first.drops);
  EXPECT_GT(eligible_loss, kept_loss + 0.1)
      << "protected " << kept_loss << ", eligible " << eligible_loss;
}

TEST_F(Network, GrayFailureLosesTheConfiguredShareOnItsSpineOnly) {
  options_.gray.spine = 1;
  options_.gray.loss_rate = 0.05;
  Testbed testbed(runner_, options_);
  send_udp_from(host_namespace(options_, 0), spine_address(1, 1), 20000);  // crosses spine 1
  send_udp_from(host_namespace(options_, 0), spine_address(1, 0), 5000);   // crosses spine 0
  const ClassLoss loss = testbed.gray_loss();
  const double seen = static_cast<double>(loss.seen[7]);
  ASSERT_GT(seen, 2000);
  EXPECT_NEAR(static_cast<double>(loss.dropped[7]) / seen, 0.05, 0.015);
  // Spine 0's traffic never met the failure: its port towards host 1 lost nothing.
  std::uint64_t spine0_drops = 0;
  for (const auto& q : testbed.port_stats(0, 1)) spine0_drops += q.drops;
  EXPECT_EQ(spine0_drops, 0u);
}

TEST_F(Network, TcpFlowsSpreadOverBothSpines) {
  Testbed testbed(runner_, options_);
  server(1, 6001);
  run_checked(runner_, {"ip", "netns", "exec", host_namespace(options_, 0), "iperf3", "-c",
                        host_address(1), "-p", "6001", "-P", "16", "-n", "16M"});
  std::uint64_t per_spine[2] = {0, 0};
  for (int s = 0; s < 2; ++s) {
    for (const auto& q : testbed.port_stats(s, 1)) per_spine[s] += q.bytes;
  }
  // 16 flows hashed over 2 spines: all on one has probability 2^-15.
  EXPECT_GT(per_spine[0], 1'000'000u);
  EXPECT_GT(per_spine[1], 1'000'000u);
}

TEST_F(Network, BackgroundTrafficStartsAndStops) {
  Testbed testbed(runner_, options_);
  const auto before = read_switch_counters(testbed);
  {
    BackgroundTraffic load(options_, BackgroundOptions{});
    EXPECT_EQ(load.flows().size(), 4u);  // one TCP flood per host + one UDP flood
    std::this_thread::sleep_for(std::chrono::seconds(2));
  }
  const auto moved = read_switch_counters(testbed) - before;
  std::uint64_t best_effort = moved.sent[7];
  EXPECT_GT(best_effort, 5000u);
  EXPECT_TRUE(run_checked(runner_, {"ip", "netns", "pids", host_namespace(options_, 0)}).empty());
}

TEST_F(Network, ReleasedBackgroundRunsUntilTheTestbedIsRemoved) {
  // `dlcp testbed up --background`: the floods outlive the command and die with the testbed.
  Testbed testbed(runner_, options_, Persistence::kUntilRemoved);
  {
    BackgroundTraffic load(options_, BackgroundOptions{});
    load.release();
  }
  const auto before = read_switch_counters(testbed);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  EXPECT_GT((read_switch_counters(testbed) - before).sent[7], 1000u) << "the floods stopped";
  std::vector<pid_t> flows;
  for (int host = 0; host < options_.hosts; ++host) {
    std::istringstream pids(
        run_checked(runner_, {"ip", "netns", "pids", host_namespace(options_, host)}));
    for (pid_t pid = 0; pids >> pid;) flows.push_back(pid);
  }
  EXPECT_EQ(flows.size(), 8u);  // a server and a client per flow
  EXPECT_FALSE(remove_leftovers(runner_, options_.prefix).empty());
  EXPECT_TRUE(namespaces().empty());
  // The flows are this process's children (`ip netns exec` execs iperf3): each must end.
  for (const pid_t pid : flows) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (::waitpid(pid, nullptr, WNOHANG) == 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_NE(::kill(pid, 0), 0) << "iperf3 " << pid << " outlived the removed testbed";
  }
}

}  // namespace
}  // namespace dlcp::testbed
