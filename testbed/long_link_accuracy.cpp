#include "long_link_accuracy.hpp"

#include <algorithm>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "background.hpp"
#include "topology.hpp"

namespace dlcp::testbed {

namespace {

int first_host_of_site(const TestbedOptions& options, int site) {
  for (int h = 0; h < options.hosts; ++h) {
    if (site_of_host(options, h) == site) return h;
  }
  return -1;
}

PingSummary ping(CommandRunner& runner, const std::string& netns, const std::string& address,
                 int count) {
  // Intervals under 200 ms need root, which the testbed has.
  return parse_ping_summary(
      run_checked(runner, {"ip", "netns", "exec", netns, "ping", "-q", "-n", "-c",
                           std::to_string(count), "-i", "0.01", address}));
}

}  // namespace

PingSummary parse_ping_summary(const std::string& text) {
  PingSummary summary;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.find("packets transmitted") != std::string::npos) {
      std::istringstream words(line);
      std::string word;
      words >> summary.transmitted >> word >> word >> summary.received;
    }
    const auto equals = line.find(" = ");
    if (line.rfind("rtt ", 0) == 0 && equals != std::string::npos) {
      std::istringstream values(line.substr(equals + 3));
      char slash = 0;
      values >> summary.min_ms >> slash >> summary.avg_ms >> slash >> summary.max_ms;
    }
  }
  return summary;
}

AccuracyResult measure_long_link(CommandRunner& runner, const Testbed& testbed,
                                 const AccuracyOptions& options) {
  const TestbedOptions& net = testbed.options();
  const int near = first_host_of_site(net, 0);
  const int far = first_host_of_site(net, 1);
  if (net.sites != 2 || far < 0 || site_of_host(net, near + 1) != 0) {
    throw std::runtime_error(
        "measuring the long link needs two sites, with two hosts or more in the first");
  }
  const int near_peer = near + 1;
  AccuracyResult result;
  result.asked_one_way_us = net.long_link.one_way_ms * 1e3;
  // UDP payload + UDP and IP headers + Ethernet header: the frame the TAP device hands over.
  const auto frame_bytes = static_cast<std::size_t>(options.probe_payload_bytes) + 8 + 20 + 14;
  result.probe_wire_us =
      static_cast<double>(serialization_time(frame_bytes, net.long_link.rate_bps).count()) / 1e3;

  std::optional<BackgroundTraffic> tcp;
  if (options.tcp_share > 0) {
    BackgroundOptions background;
    background.tcp_share = options.tcp_share;
    background.udp_share = 0;
    tcp.emplace(net, background);
  }
  std::optional<UdpFlood> flood;
  if (options.udp_load_mbit > 0) {
    // From site 0's second host to site 1's last, so that it shares the long link with the probe
    // but not the probe's sending host.
    flood.emplace(host_namespace(net, near_peer), host_address(net.hosts - 1),
                  options.udp_load_mbit);
  }
  UdpProbeOptions probe;
  probe.from_netns = host_namespace(net, near);
  probe.packets_per_second = options.probe_packets_per_second;
  probe.payload_bytes = options.probe_payload_bytes;
  probe.seconds = options.seconds;
  probe.drain_seconds = 0.2 + 2 * net.long_link.one_way_ms / 1e3;

  probe.to_netns = host_namespace(net, near_peer);
  probe.to_address = host_address(near_peer);
  result.same_site = run_udp_probe(probe);

  const LongLinkStats before = sum_long_links(testbed.long_link_stats());
  probe.to_netns = host_namespace(net, far);
  probe.to_address = host_address(far);
  result.cross_site = run_udp_probe(probe);
  result.forwarder = long_link_difference(sum_long_links(testbed.long_link_stats()), before);

  if (options.pings > 0) {
    result.ping_same_site = ping(runner, probe.from_netns, host_address(near_peer), options.pings);
    result.ping_cross_site = ping(runner, probe.from_netns, host_address(far), options.pings);
    result.ping_added_rtt_ms = result.ping_cross_site.avg_ms - result.ping_same_site.avg_ms;
  }

  result.same_site_us = summarize(result.same_site.one_way_us);
  result.cross_site_us = summarize(result.cross_site.one_way_us);
  result.added_mean_us = result.cross_site_us.mean - result.same_site_us.mean;
  result.added_median_us = result.cross_site_us.median - result.same_site_us.median;
  const auto& f = result.forwarder;
  const auto frames = f.direction[0].link.frames_offered + f.direction[1].link.frames_offered;
  if (f.wall_seconds > 0) result.forwarder_cpu_share = f.cpu_seconds / f.wall_seconds;
  if (frames > 0)
    result.forwarder_cpu_us_per_frame = f.cpu_seconds * 1e6 / static_cast<double>(frames);
  return result;
}

}  // namespace dlcp::testbed
