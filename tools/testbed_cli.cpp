#include "testbed_cli.hpp"

#include "commands.hpp"

#include <pthread.h>

#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>

#include "background.hpp"
#include "long_link_cli.hpp"
#include "switch/switch_config.hpp"
#include "testbed.hpp"
#include "topology.hpp"

namespace dlcp::tools {

namespace {

struct SwitchConfigArgs {
  std::string format = "linux-tc";
  std::string device = "h0";
  std::vector<std::string> ports = {"Ethernet0"};
  testbed::TestbedOptions network;
};

struct PortFlags {
  double rate_mbit = 400;
  double buffer_kib = 256;
  double drop_eligible_kib = 48;
};

std::string down_command(const testbed::TestbedOptions& network) {
  return "dlcp testbed down" + (network.prefix == "dlcp" ? "" : " --prefix " + network.prefix);
}

// A two-site testbed lives only as long as the process that runs its long link, so `testbed up
// --sites 2` holds it in the foreground until SIGINT or SIGTERM, then tears it down (as its guard
// process does if this one is killed).
int hold_two_sites(testbed::SystemCommands& runner, const testbed::TestbedOptions& network,
                   bool with_background) {
  // Blocked before any thread starts, so that the forwarders inherit the mask and sigwait below
  // is the only taker.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  testbed::Testbed built(runner, network);
  std::optional<testbed::BackgroundTraffic> load;
  if (with_background) {
    load.emplace(network, testbed::BackgroundOptions{});
    std::cout << "background: " << load->flows().size() << " iperf3 flows\n";
  }
  const auto& link = network.long_link;
  std::cout << "testbed up: " << network.hosts << " hosts in two sites, " << network.spines
            << " spines each at " << network.port.rate_bps / 1e6 << " Mbit/s, MTU "
            << network.port.mtu << "; long link " << link.one_way_ms << " ms one way, "
            << link.rate_bps / 1e6 << " Mbit/s, loss " << link.random_loss << " random + "
            << link.burst_loss << " in bursts of " << link.burst_length
            << " frames; run commands in a host with `ip netns exec "
            << testbed::host_namespace(network, 0) << " ...`; held until SIGINT or SIGTERM (or `"
            << down_command(network) << "`)" << std::endl;
  int signal = 0;
  sigwait(&stop, &signal);
  std::cout << "testbed down: " << strsignal(signal) << std::endl;
  return 0;
}

}  // namespace

void add_testbed_options(CLI::App* command, testbed::TestbedOptions& o) {
  command->add_option("--hosts", o.hosts, "Hosts (namespaces), each linked to every spine")
      ->check(CLI::Range(2, 16));
  command->add_option("--spines", o.spines, "Spine switches (Linux bridges)")
      ->check(CLI::Range(1, 4));
  command->add_option("--mtu", o.port.mtu, "MTU of every link")->check(CLI::Range(576, 65535));
  command
      ->add_option_function<double>(
          "--rate-mbit", [&o](double v) { o.port.rate_bps = v * 1e6; },
          "Emulated link rate in Mbit/s (default 400)")
      ->check(CLI::Range(0.1, 1e6));
  command
      ->add_option_function<double>(
          "--buffer-kib",
          [&o](double v) { o.port.buffer_bytes = static_cast<std::size_t>(v * 1024); },
          "Per-queue switch buffer in KiB (default 256)")
      ->check(CLI::PositiveNumber);
  command
      ->add_option_function<double>(
          "--drop-eligible-kib",
          [&o](double v) { o.port.drop_eligible_bytes = static_cast<std::size_t>(v * 1024); },
          "Buffer of the drop-eligible queues in KiB (default 48)")
      ->check(CLI::PositiveNumber);
  command->add_flag("--best-effort-alone", o.port.best_effort_alone,
                    "Leave best effort alone in class 7 (dlcp's last class shares class 6)");
  command->add_option("--gray-spine", o.gray.spine, "Spine with the gray failure (-1 = none)")
      ->check(CLI::Range(-1, 3));
  command->add_option("--gray-loss", o.gray.loss_rate, "Gray failure loss rate")
      ->check(CLI::Range(0.0, 0.5));
  command
      ->add_option("--gray-burst-ms", o.gray.burst_ms,
                   "Mean loss burst in ms (0 = independent drops)")
      ->check(CLI::Range(0.0, 10000.0));
  command->add_option("--prefix", o.prefix, "Namespace name prefix");
}

SubcommandRunner add_testbed_commands(CLI::App& app) {
  auto args = std::make_shared<SwitchConfigArgs>();
  auto* config = app.add_subcommand(
      "switch-config",
      "Print the switch configuration that makes the policy's priority classes and drop "
      "precedence take effect (linux-tc is exactly what the testbed applies)");
  config->add_option("--format", args->format, "Output format")
      ->check(CLI::IsMember({"linux-tc", "sonic"}));
  config->add_option("--device", args->device, "Egress device (linux-tc)");
  config->add_option("--ports", args->ports, "Switch ports (sonic)")->delimiter(',');
  add_testbed_options(config, args->network);

  auto network = std::make_shared<testbed::TestbedOptions>();
  auto* bed = app.add_subcommand("testbed", "The emulated switch network (needs root)");
  bed->require_subcommand(1);
  auto* up = bed->add_subcommand("up", "Build it and leave it up (until `dlcp testbed down`)");
  add_testbed_options(up, *network);
  auto with_background = std::make_shared<bool>(false);
  up->add_flag("--background", *with_background,
               "Start the background TCP/UDP floods too (they run until `dlcp testbed down`)");
  up->add_option("--sites", network->sites,
                 "2: two sites joined by the long link, which runs in this command: it then "
                 "stays in the foreground until SIGINT or SIGTERM and tears everything down")
      ->check(CLI::Range(1, 2));
  add_long_link_options(up, network->long_link);
  auto* down = bed->add_subcommand("down", "Remove everything the testbed created");
  down->add_option("--prefix", network->prefix, "Namespace name prefix");
  auto* status = bed->add_subcommand("status", "Show what the testbed has created");
  status->add_option("--prefix", network->prefix, "Namespace name prefix");
  const LongLinkCommand long_link = add_long_link_command(bed);

  return [=](ProgramArguments) -> int {
    if (config->parsed()) {
      args->network.validate();
      const auto plan = switchconf::make_switch_plan(DscpTable::defaults(), args->network.port);
      if (args->format == "sonic") {
        std::cout << switchconf::sonic_qos_json(plan, DscpTable::defaults(), args->ports) << "\n";
      } else {
        for (const auto& line : switchconf::linux_tc_commands(plan, args->device)) {
          std::cout << "tc " << line << "\n";
        }
      }
      return 0;
    }
    testbed::SystemCommands runner;
    if (up->parsed() && network->sites == 1) {
      for (const auto* option : up->get_options()) {
        if (option->count() > 0 && option->get_group() == kLongLinkGroup) {
          throw std::invalid_argument(option->get_name() +
                                      " describes the long link: add --sites 2");
        }
      }
    }
    if (up->parsed() && network->sites == 2) {
      return hold_two_sites(runner, *network, *with_background);
    }
    if (up->parsed()) {
      testbed::Testbed built(runner, *network, testbed::Persistence::kUntilRemoved);
      if (*with_background) {
        try {
          testbed::BackgroundTraffic load(*network, testbed::BackgroundOptions{});
          load.release();
          std::cout << "background: " << load.flows().size() << " iperf3 flows\n";
        } catch (...) {
          built.tear_down();  // all or nothing: no half-loaded network left behind
          throw;
        }
      }
      std::cout << "testbed up: " << network->hosts << " hosts, " << network->spines
                << " spines at " << network->port.rate_bps / 1e6 << " Mbit/s, MTU "
                << network->port.mtu << "; run commands in a host with `ip netns exec "
                << testbed::host_namespace(*network, 0) << " ...`; remove with `"
                << down_command(*network) << "`\n";
      return 0;
    }
    if (long_link.command->parsed()) return long_link.run();
    if (down->parsed()) {
      testbed::check_testbed_available();
      const auto removed = testbed::remove_leftovers(runner, network->prefix);
      std::cout << (removed.empty() ? "nothing to remove" : "removed") << "";
      for (const auto& name : removed) std::cout << " " << name;
      std::cout << "\n";
      return 0;
    }
    if (status->parsed()) {
      const std::string path = testbed::state_file(network->prefix);
      std::ifstream in(path);
      if (!in) {
        std::cout << "no testbed '" << network->prefix << "' is up\n";
        return 0;
      }
      std::cout << in.rdbuf();
      return 0;
    }
    return -1;
  };
}

}  // namespace dlcp::tools
