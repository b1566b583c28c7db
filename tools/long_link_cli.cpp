#include "long_link_cli.hpp"

#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "long_link_accuracy.hpp"
#include "testbed.hpp"
#include "testbed_cli.hpp"

namespace dlcp::tools {

namespace {

struct LongLinkArgs {
  testbed::TestbedOptions network;
  testbed::AccuracyOptions accuracy;
  std::vector<double> loads_mbit = {0, 100, 300};
  bool json = false;
};

nlohmann::json to_json(const testbed::AccuracyResult& r, double load) {
  const auto& f = r.forwarder;
  return {
      {"udp_load_mbit", load},
      {"asked_one_way_us", r.asked_one_way_us},
      {"probe_wire_us", r.probe_wire_us},
      {"added_mean_us", r.added_mean_us},
      {"added_median_us", r.added_median_us},
      {"same_site_mean_us", r.same_site_us.mean},
      {"cross_site_mean_us", r.cross_site_us.mean},
      {"cross_site_p99_us", r.cross_site_us.p99},
      {"probe_loss", r.cross_site.loss()},
      {"ping_same_site_avg_ms", r.ping_same_site.avg_ms},
      {"ping_cross_site_avg_ms", r.ping_cross_site.avg_ms},
      {"ping_added_rtt_ms", r.ping_added_rtt_ms},
      {"forwarder_frames", f.direction[0].link.frames_offered + f.direction[1].link.frames_offered},
      {"forwarder_held_mean_us", f.direction[0].delay.mean_us()},
      {"forwarder_late_mean_us", f.direction[0].delay.late_mean_us()},
      {"forwarder_late_max_us", f.direction[0].delay.late_max_us},
      {"dropped_random", f.direction[0].link.dropped_random},
      {"dropped_burst", f.direction[0].link.dropped_burst},
      {"dropped_queue", f.direction[0].link.dropped_queue},
      {"forwarder_cpu_share", r.forwarder_cpu_share},
      {"forwarder_cpu_us_per_frame", r.forwarder_cpu_us_per_frame}};
}

}  // namespace

void add_long_link_options(CLI::App* command, testbed::LongLinkOptions& link) {
  // The group names the options, so that `testbed up` can refuse them without two sites.
  command->option_defaults()->group(kLongLinkGroup);
  command->add_option("--one-way-ms", link.one_way_ms, "The long link's one-way delay (ms)");
  command
      ->add_option_function<double>(
          "--link-rate-mbit", [&link](double v) { link.rate_bps = v * 1e6; },
          "The long link's rate in Mbit/s (default 400)")
      ->check(CLI::PositiveNumber);
  command->add_option("--jitter-us", link.jitter_us, "Uniform jitter, +- this (us)");
  command->add_flag("--reorder", link.reorder, "Let jitter reorder frames");
  command->add_option("--random-loss", link.random_loss, "Independent loss per frame");
  command->add_option("--burst-loss", link.burst_loss, "Long-run loss in bursts");
  command->add_option("--burst-length", link.burst_length, "Mean loss burst (frames)");
  command->add_option("--spin-us", link.spin_us, "Spin this long before a release (us)");
  command->option_defaults()->group("Options");
}

LongLinkCommand add_long_link_command(CLI::App* testbed_command) {
  auto args = std::make_shared<LongLinkArgs>();
  args->network.prefix = "dlcpll";
  args->network.sites = 2;
  args->network.gray.spine = -1;
  auto* command = testbed_command->add_subcommand(
      "long-link",
      "Build two sites joined by the long link and measure the delay it adds (UDP probe, ping) "
      "and its CPU time, at each load");
  add_testbed_options(command, args->network);
  add_long_link_options(command, args->network.long_link);
  command->add_option("--loads", args->loads_mbit, "UDP flood across the link (Mbit/s), each")
      ->delimiter(',');
  command->add_option("--tcp-share", args->accuracy.tcp_share,
                      "Background iperf3 TCP floods, each at this share of a link (0 = none)");
  command->add_option("--probe-pps", args->accuracy.probe_packets_per_second,
                      "Probe packets per second");
  command->add_option("--seconds", args->accuracy.seconds, "Probe duration per path and load");
  command->add_option("--pings", args->accuracy.pings, "Pings per path (0 = none)");
  command->add_flag("--json", args->json, "One JSON line per load");

  auto run = [args]() -> int {
    testbed::SystemCommands runner;
    testbed::Testbed bed(runner, args->network);
    if (!args->json) {
      std::printf(
          "long link: %.3f ms one way, %.0f Mbit/s, jitter %.0f us, loss %.4f random + "
          "%.4f in bursts of %.1f frames; probe %.0f packets/s of %d bytes\n",
          args->network.long_link.one_way_ms, args->network.long_link.rate_bps / 1e6,
          args->network.long_link.jitter_us, args->network.long_link.random_loss,
          args->network.long_link.burst_loss, args->network.long_link.burst_length,
          args->accuracy.probe_packets_per_second, args->accuracy.probe_payload_bytes);
      // asked: the one-way delay plus the probe frame's serialization; modelled: the delay the
      // model scheduled for that direction's frames on average (asked plus queueing behind the
      // load); late: how far past their scheduled release the frames were written.
      std::printf("%9s %9s %9s %9s %9s %8s %7s %9s %7s %9s %8s %7s\n", "load Mbit", "asked us",
                  "modelled", "added us", "median us", "error %", "loss %", "ping +RTT", "late us",
                  "CPU share", "us/frame", "frames");
    }
    for (const double load : args->loads_mbit) {
      auto options = args->accuracy;
      options.udp_load_mbit = load;
      const auto r = testbed::measure_long_link(runner, bed, options);
      if (args->json) {
        std::cout << to_json(r, load).dump() << std::endl;
        continue;
      }
      const double expected = r.asked_one_way_us + r.probe_wire_us;
      const auto& f = r.forwarder;
      const double modelled = f.direction[0].delay.mean_us() - f.direction[0].delay.late_mean_us();
      std::printf("%9.0f %9.1f %9.1f %9.1f %9.1f %8.2f %7.3f %9.3f %7.1f %9.3f %8.2f %7llu\n", load,
                  expected, modelled, r.added_mean_us, r.added_median_us,
                  100 * (r.added_mean_us - expected) / expected, 100 * r.cross_site.loss(),
                  r.ping_added_rtt_ms, f.direction[0].delay.late_mean_us(), r.forwarder_cpu_share,
                  r.forwarder_cpu_us_per_frame,
                  static_cast<unsigned long long>(f.direction[0].link.frames_offered +
                                                  f.direction[1].link.frames_offered));
    }
    return 0;
  };
  return {command, run};
}

}  // namespace dlcp::tools
