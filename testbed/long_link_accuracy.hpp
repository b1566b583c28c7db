// How accurately the long link adds the delay it is asked for, on a running two-site testbed:
// a UDP probe and ping within a site and across the long link, under a chosen load, and the
// forwarder's CPU time. The difference between the two paths is what the long link adds, so the
// bridges', veths' and sockets' own latency cancels out.
#pragma once

#include <string>

#include "command.hpp"
#include "testbed.hpp"
#include "udp_probe.hpp"

namespace dlcp::testbed {

struct PingSummary {
  int transmitted = 0;
  int received = 0;
  double min_ms = 0;
  double avg_ms = 0;
  double max_ms = 0;
};

// Parses the summary `ping -q` prints ("N packets transmitted, M received", "rtt min/avg/max/mdev
// = a/b/c/d ms"); zeros for what is missing.
PingSummary parse_ping_summary(const std::string& text);

struct AccuracyOptions {
  double probe_packets_per_second = 5000;
  int probe_payload_bytes = 1000;
  double seconds = 4;
  double udp_load_mbit = 0;  // a paced UDP flood across the long link, beside the probe
  double tcp_share = 0;      // iperf3 TCP floods (BackgroundTraffic) at this share of a link
  int pings = 200;           // at 10 ms intervals; 0 = no ping
};

struct AccuracyResult {
  double asked_one_way_us = 0;
  double probe_wire_us = 0;  // the probe frame's serialization at the link rate
  UdpProbeResult same_site;
  UdpProbeResult cross_site;
  DelaySummary same_site_us;
  DelaySummary cross_site_us;
  double added_mean_us = 0;    // cross-site mean minus same-site mean
  double added_median_us = 0;  // the same for medians
  PingSummary ping_same_site;
  PingSummary ping_cross_site;
  double ping_added_rtt_ms = 0;           // cross-site average round trip minus same-site
  LongLinkStats forwarder;                // totals over the measurement, every spine's link summed
  double forwarder_cpu_share = 0;         // forwarder CPU seconds per second
  double forwarder_cpu_us_per_frame = 0;  // CPU microseconds per frame offered
};

// Measures on `testbed` (two sites, two hosts or more in site 0 and one in site 1): the probe
// runs from site 0's first host to its second (same site) and to site 1's first host (across),
// one after the other.
AccuracyResult measure_long_link(CommandRunner& runner, const Testbed& testbed,
                                 const AccuracyOptions& options);

}  // namespace dlcp::testbed
