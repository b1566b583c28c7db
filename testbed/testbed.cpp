#include "testbed.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "switch/switch_config.hpp"
#include "topology.hpp"

namespace dlcp::testbed {

namespace {

constexpr const char* kStateDir = "/run/dlcp-testbed";

std::vector<std::string> existing_namespaces(CommandRunner& runner) {
  const std::string listing = run_checked(runner, {"ip", "netns", "list"});
  std::vector<std::string> names;
  std::istringstream lines(listing);
  std::string line;
  while (std::getline(lines, line)) {
    const auto end = line.find(' ');
    names.push_back(line.substr(0, end));
  }
  return names;
}

}  // namespace

std::vector<std::string> prefixed_namespaces(CommandRunner& runner, const std::string& prefix) {
  std::vector<std::string> ours;
  for (auto& name : existing_namespaces(runner)) {
    if (name.rfind(prefix + "-", 0) == 0) ours.push_back(std::move(name));
  }
  std::sort(ours.begin(), ours.end());
  return ours;
}

namespace {

bool process_alive(int pid) {
  return pid > 0 && (::kill(pid, 0) == 0 || errno == EPERM);
}

void delete_namespaces(CommandRunner& runner, const std::vector<std::string>& names) {
  const auto existing = existing_namespaces(runner);
  for (const auto& name : names) {
    if (std::find(existing.begin(), existing.end(), name) == existing.end()) continue;
    // Processes still inside (background traffic, a stuck rank) would keep their interfaces.
    const auto pids = runner.run({"ip", "netns", "pids", name});
    std::istringstream list(pids.output);
    int pid = 0;
    while (list >> pid) ::kill(pid, SIGKILL);
    runner.run({"ip", "netns", "del", name});
  }
}

nlohmann::json read_state(const std::string& path) {
  std::ifstream in(path);
  if (!in) return nullptr;
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception&) {
    return nullptr;
  }
}

// A shell that outlives a crash of its owner: it waits for the owner's end of a pipe to close
// and then removes what the state file still records. Ctrl-C does not reach it (new session,
// signals ignored), so it finishes the clean-up an interrupted run could not.
int start_guard(const std::string& state, const std::vector<std::string>& names, int* write_fd) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return -1;
  std::string script =
      "trap '' INT TERM HUP; cat >/dev/null; "
      "if [ -f " +
      state + " ] && grep -q '\"owner_pid\":" + std::to_string(::getpid()) + "[,}]' " + state +
      "; then for ns in";
  for (const auto& name : names) script += " " + name;
  script +=
      "; do for p in $(ip netns pids $ns 2>/dev/null); do kill -9 $p; done; "
      "ip netns del $ns 2>/dev/null; done; rm -f " +
      state + "; fi";
  const std::string sh = "/bin/sh";
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return -1;
  }
  if (pid == 0) {
    ::setsid();
    ::dup2(fds[0], 0);
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, 1);
    ::dup2(null, 2);
    ::execl(sh.c_str(), sh.c_str(), "-c", script.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  ::close(fds[0]);
  *write_fd = fds[1];
  return pid;
}

}  // namespace

void check_testbed_available() {
  if (::geteuid() != 0) {
    throw TestbedUnavailable(
        "the testbed creates network namespaces, links and qdiscs, which needs root");
  }
  for (const char* tool : {"ip", "tc", "nft"}) {
    if (find_program(tool).empty()) {
      throw TestbedUnavailable(std::string("the testbed needs `") + tool +
                               "` (Debian packages iproute2 and nftables)");
    }
  }
}

std::string state_file(const std::string& prefix) {
  return std::string(kStateDir) + "/" + prefix + ".json";
}

std::vector<std::string> remove_leftovers(CommandRunner& runner, const std::string& prefix) {
  const std::string path = state_file(prefix);
  const nlohmann::json state = read_state(path);
  if (state.is_null()) return {};
  const int owner = state.value("owner_pid", 0);
  if (owner != ::getpid() && process_alive(owner)) {
    throw std::runtime_error("the testbed '" + prefix + "' is in use by process " +
                             std::to_string(owner) + " (state in " + path + ")");
  }
  std::vector<std::string> names = state.value("namespaces", std::vector<std::string>{});
  delete_namespaces(runner, names);
  std::filesystem::remove(path);
  return names;
}

Testbed::Testbed(CommandRunner& runner, const TestbedOptions& options, Persistence persistence)
    : runner_(runner), options_(options), persistence_(persistence) {
  options_.validate();
  if (options_.sites > 1 && persistence_ == Persistence::kUntilRemoved) {
    throw std::runtime_error(
        "a two-site testbed cannot stay up after this process: its long link is a thread of "
        "this process");
  }
  plan_ = switchconf::make_switch_plan(DscpTable::defaults(), options_.port);
  switchconf::PortOptions long_port = options_.port;
  long_port.rate_bps = options_.long_link.rate_bps * kLongLinkPortShare;
  // The drop-eligible queues keep their share of a class's buffer.
  long_port.drop_eligible_bytes =
      static_cast<std::size_t>(static_cast<double>(options_.port.drop_eligible_bytes) *
                               static_cast<double>(options_.long_link.queue_bytes) /
                               static_cast<double>(options_.port.buffer_bytes));
  long_port.buffer_bytes = options_.long_link.queue_bytes;
  long_link_plan_ = switchconf::make_switch_plan(DscpTable::defaults(), long_port);
  check_testbed_available();
  remove_leftovers(runner_, options_.prefix);
  const auto names = all_namespaces(options_);
  const auto existing = existing_namespaces(runner_);
  for (const auto& name : names) {
    if (std::find(existing.begin(), existing.end(), name) != existing.end()) {
      throw std::runtime_error("network namespace " + name +
                               " exists but was not created by dlcp's testbed; refusing to touch "
                               "it (choose another --prefix)");
    }
  }
  // Record before creating, so that a crash half-way is still cleaned up.
  std::filesystem::create_directories(kStateDir);
  {
    std::ofstream out(state_file(options_.prefix));
    const int owner = persistence_ == Persistence::kUntilDestroyed ? ::getpid() : 0;
    out << nlohmann::json{{"owner_pid", owner}, {"namespaces", names}}.dump() << "\n";
  }
  up_ = true;
  if (persistence_ == Persistence::kUntilDestroyed) {
    guard_pid_ = start_guard(state_file(options_.prefix), names, &guard_fd_);
  }
  try {
    build();
  } catch (...) {
    tear_down();
    throw;
  }
}

Testbed::~Testbed() {
  if (persistence_ == Persistence::kUntilRemoved) return;
  try {
    tear_down();
  } catch (...) {
    // The guard process removes what is left.
  }
}

void Testbed::run(const std::vector<std::string>& argv, const std::string& input) const {
  run_checked(runner_, argv, input);
}

void Testbed::build() {
  for (const auto& name : all_namespaces(options_)) run({"ip", "netns", "add", name});
  for (int site = 0; site < options_.sites; ++site) {
    for (int s = 0; s < options_.spines; ++s) build_spine(spine_namespace(options_, s, site));
  }
  for (int h = 0; h < options_.hosts; ++h) build_host(h);
  for (int h = 0; h < options_.hosts; ++h) add_routes(h);
  for (int site = 0; site < options_.sites; ++site) {
    for (int s = 0; s < options_.spines; ++s) configure_switch_ports(s, site);
  }
  if (options_.sites == 2) {
    for (int s = 0; s < options_.spines; ++s) build_long_link(s);
  }
  if (options_.gray.spine >= 0) {
    const std::string spine = spine_namespace(options_, options_.gray.spine);
    run({"ip", "netns", "exec", spine, "nft", "-f", "-"},
        gray_failure_ruleset(plan_, options_.gray));
    bursts_ = std::make_unique<BurstDriver>(runner_, spine, options_.gray);
  }
}

void Testbed::build_spine(const std::string& ns) {
  const std::string mtu = std::to_string(options_.port.mtu);
  run({"ip", "-n", ns, "link", "set", "lo", "up"});
  run({"ip", "-n", ns, "link", "add", kBridge, "mtu", mtu, "type", "bridge", "stp_state", "0"});
  run({"ip", "-n", ns, "link", "set", kBridge, "up"});
}

void Testbed::build_host(int host) {
  const std::string ns = host_namespace(options_, host);
  const std::string mtu = std::to_string(options_.port.mtu);
  run({"ip", "-n", ns, "link", "set", "lo", "up"});
  // The host address is a /24 without a prefix route, so that tools which pick interfaces by
  // subnet (Open MPI's if_include) find it, while the /32 multipath routes below carry traffic to
  // other hosts over the fabric. It sits on one end of a veth pair inside the host (this kernel
  // has no dummy interfaces).
  run({"ip", "-n", ns, "link", "add", kHostInterface, "type", "veth", "peer", "name",
       std::string(kHostInterface) + "-peer"});
  run({"ip", "-n", ns, "addr", "add", host_address(host) + "/24", "dev", kHostInterface,
       "noprefixroute"});
  run({"ip", "-n", ns, "link", "set", std::string(kHostInterface) + "-peer", "up"});
  run({"ip", "-n", ns, "link", "set", kHostInterface, "up"});
  // Layer-4 hashing spreads TCP flows over the spines; replies may return on the other spine, so
  // reverse-path filtering must not drop them.
  run({"ip", "netns", "exec", ns, "/bin/sh", "-c",
       "echo 1 > /proc/sys/net/ipv4/fib_multipath_hash_policy && "
       "echo 0 > /proc/sys/net/ipv4/conf/all/rp_filter && "
       "echo 0 > /proc/sys/net/ipv4/conf/default/rp_filter"});
  for (int s = 0; s < options_.spines; ++s) {
    const std::string spine = spine_namespace(options_, s, site_of_host(options_, host));
    const std::string nic = host_interface(s);
    const std::string port = switch_port(host);
    run({"ip", "link", "add", nic, "netns", ns, "mtu", mtu, "type", "veth", "peer", "name", port,
         "netns", spine, "mtu", mtu});
    run({"ip", "-n", spine, "link", "set", port, "master", kBridge, "up"});
    run({"ip", "-n", ns, "addr", "add", spine_address(host, s) + "/24", "dev", nic});
    // A real NIC puts frames on the wire: segment UDP/TCP GSO batches at the host, so that the
    // switch queues (and their byte limits) see MTU-sized packets, not 64 KB super-packets.
    run({"ip", "-n", ns, "link", "set", nic, "gso_max_segs", "1", "up"});
  }
}

void Testbed::add_routes(int host) {
  const std::string ns = host_namespace(options_, host);
  for (int peer = 0; peer < options_.hosts; ++peer) {
    if (peer == host) continue;
    std::vector<std::string> argv = {
        "ip", "-n", ns, "route", "add", host_address(peer) + "/32", "src", host_address(host)};
    for (int s = 0; s < options_.spines; ++s) {
      for (const auto& word : {std::string("nexthop"), std::string("via"), spine_address(peer, s),
                               std::string("dev"), host_interface(s)}) {
        argv.push_back(word);
      }
    }
    run(argv);
  }
}

void Testbed::configure_switch_ports(int spine, int site) {
  std::string batch;
  for (int h = 0; h < options_.hosts; ++h) {
    if (site_of_host(options_, h) != site) continue;
    for (const auto& command : switchconf::linux_tc_commands(plan_, switch_port(h))) {
      batch += command + "\n";
    }
  }
  run({"tc", "-n", spine_namespace(options_, spine, site), "-batch", "-"}, batch);
}

void Testbed::build_long_link(int spine) {
  const std::array<std::string, 2> sides = {spine_namespace(options_, spine, 0),
                                            spine_namespace(options_, spine, 1)};
  // Each spine's link draws its own losses.
  long_links_.push_back(std::make_unique<LongLink>(sides, kLongLinkPort, options_.long_link,
                                                   options_.long_link.seed + 1000 * spine));
  for (const auto& ns : sides) {
    // A long transmit queue: if the forwarder is starved of CPU for a while, frames wait in the
    // device rather than being dropped where no counter of the link sees them.
    run({"ip", "-n", ns, "link", "set", kLongLinkPort, "mtu", std::to_string(options_.port.mtu),
         "txqueuelen", "10000", "master", kBridge, "up"});
    if (!options_.long_link.priority_port) continue;
    std::string batch;
    for (const auto& command : switchconf::linux_tc_commands(long_link_plan_, kLongLinkPort)) {
      batch += command + "\n";
    }
    run({"tc", "-n", ns, "-batch", "-"}, batch);
  }
}

std::vector<LongLinkStats> Testbed::long_link_stats() const {
  std::vector<LongLinkStats> stats;
  for (const auto& link : long_links_) stats.push_back(link->stats());
  return stats;
}

std::vector<QueueStats> parse_tc_class_stats(const std::string& text) {
  // `tc -s class show` (this iproute2 has no JSON for HTB classes):
  //   class htb 1:10 parent 1:1 leaf 10: prio 0 rate ...
  //    Sent 1234 bytes 5 pkt (dropped 6, overlimits 0 requeues 0)
  std::vector<QueueStats> stats;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string first;
    words >> first;
    if (first == "class") {
      std::string kind;
      QueueStats queue;
      words >> kind >> queue.classid;
      stats.push_back(queue);
    } else if (first == "Sent" && !stats.empty()) {
      std::string unit;
      std::string dropped;
      QueueStats& queue = stats.back();
      words >> queue.bytes >> unit >> queue.packets >> unit >> dropped >> queue.drops;
    }
  }
  return stats;
}

std::vector<QueueStats> Testbed::port_stats(int spine, int host) const {
  return queue_stats(spine_namespace(options_, spine, site_of_host(options_, host)),
                     switch_port(host), plan_);
}

std::vector<QueueStats> Testbed::long_link_port_stats(int spine, int site) const {
  if (options_.sites != 2 || !options_.long_link.priority_port) return {};
  return queue_stats(spine_namespace(options_, spine, site), kLongLinkPort, long_link_plan_);
}

std::vector<QueueStats> Testbed::queue_stats(const std::string& ns, const std::string& port,
                                             const switchconf::SwitchPlan& plan) const {
  const auto parsed = parse_tc_class_stats(
      run_checked(runner_, {"tc", "-n", ns, "-s", "class", "show", "dev", port}));
  std::vector<QueueStats> stats;
  for (std::size_t q = 0; q < plan.queues.size(); ++q) {
    QueueStats queue;
    queue.classid = switchconf::linux_tc_classid(q);
    for (const auto& entry : parsed) {
      if (entry.classid == queue.classid) queue = entry;
    }
    queue.traffic_class = plan.queues[q].traffic_class;
    queue.drop_eligible = plan.queues[q].drop_eligible;
    stats.push_back(queue);
  }
  return stats;
}

ClassLoss Testbed::gray_loss() const {
  if (options_.gray.spine < 0) return {};
  return parse_gray_counters(
      run_checked(runner_, {"ip", "netns", "exec", spine_namespace(options_, options_.gray.spine),
                            "nft", "-j", "list", "table", "bridge", kGrayTable}));
}

void Testbed::tear_down() {
  if (!up_) return;
  up_ = false;
  bursts_.reset();
  long_links_.clear();  // closes the TAP devices before their namespaces go
  delete_namespaces(runner_, all_namespaces(options_));
  std::filesystem::remove(state_file(options_.prefix));
  if (guard_fd_ >= 0) {
    ::close(guard_fd_);
    guard_fd_ = -1;
  }
  if (guard_pid_ > 0) {
    ::waitpid(guard_pid_, nullptr, 0);
    guard_pid_ = -1;
  }
}

}  // namespace dlcp::testbed
