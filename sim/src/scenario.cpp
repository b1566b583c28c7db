#include "scenario.hpp"

#include <sstream>
#include <string>

#include "json.hpp"

namespace dlcp::sim {

const char* scheme_name(Scheme scheme) {
  switch (scheme) {
    case Scheme::kDlcp:
      return "dlcp";
    case Scheme::kDctcp:
      return "dctcp";
    case Scheme::kNewReno:
      return "newreno";
    case Scheme::kPfabric:
      return "pfabric";
    case Scheme::kPias:
      return "pias";
  }
  return "?";
}

bool parse_scheme(const std::string& name, Scheme* scheme) {
  for (Scheme s :
       {Scheme::kDlcp, Scheme::kDctcp, Scheme::kNewReno, Scheme::kPfabric, Scheme::kPias}) {
    if (name == scheme_name(s)) {
      *scheme = s;
      return true;
    }
  }
  return false;
}

const char* slicing_name(Slicing slicing) {
  switch (slicing) {
    case Slicing::kLayerOrder:
      return "layer_order";
    case Slicing::kLargestFirst:
      return "largest_first";
    case Slicing::kSharded:
      return "sharded";
  }
  return "?";
}

namespace {

// A non-blocking leaf-spine: uplink capacity equals the hosts' capacity on every leaf.
FabricConfig leaf_spine(int leaves, int hosts_per_leaf, int spines) {
  FabricConfig fabric;
  fabric.leaves = leaves;
  fabric.hosts_per_leaf = hosts_per_leaf;
  fabric.spines = spines;
  fabric.host_link_gbps = 100.0;
  fabric.fabric_link_gbps = 100.0 * hosts_per_leaf / spines;
  return fabric;
}

ScenarioConfig scale_scenario(const std::string& name, int leaves, int hosts_per_leaf, int spines) {
  ScenarioConfig s;
  s.name = name;
  s.fabric = leaf_spine(leaves, hosts_per_leaf, spines);
  const int hosts = s.fabric.hosts();
  s.description = std::to_string(hosts) +
                  " hosts at 100 Gbit/s, parameter server (ResNet-50), web-search background "
                  "at 30% load";
  s.workload.collective = Collective::kParameterServer;
  s.workload.model = "resnet50";
  s.workload.servers = hosts / 8;
  s.workload.iterations = 3;
  s.workload.size_scale = 0.02;
  s.background.sizes = FlowSizes::kWebSearch;
  s.background.load = 0.3;
  return s;
}

// Two sites of leaves x hosts_per_leaf / 2 hosts, each site a non-blocking leaf-spine, joined by
// a long link per spine pair. The long links together carry half a site's host capacity (2:1, a
// site's uplink to the other is narrower than its own fabric), so the background that crosses
// them (half of it: its hosts are drawn at random) loads them as it loads the hosts' links. 10 ms
// round trip and 1% of frames lost in bursts of 4, the testbed's long-link pattern; kept TCP
// connections, as training libraries keep theirs (a handshake per message would cost the
// baselines a round trip of the long link each), with Linux's RTO floor above the round trip (with
// RFC 6298's a kept DCTCP connection across a 2 ms link timed out 2,617 times in three ring
// iterations, a hundred times per burst lost, and took 40x longer); the safety stop allows for
// round trips of 40 ms.
ScenarioConfig long_link_scenario(const std::string& name, int leaves, int hosts_per_leaf,
                                  int spines) {
  ScenarioConfig s = scale_scenario(name, leaves, hosts_per_leaf, spines);
  s.fabric.sites = 2;
  const int site_hosts = s.fabric.hosts() / 2;
  s.fabric.long_link.gbps = s.fabric.host_link_gbps * site_hosts / 2 / spines;
  s.fabric.long_link.rtt_ms = 10;
  s.fabric.long_link.burst_loss = 0.01;
  s.fabric.long_link.burst_length = 4;
  s.tcp.gradient_connections = GradientConnections::kPersistent;
  s.tcp.rto_floor = RtoFloor::kLinux;
  s.max_sim_ms = 60000;
  s.description = std::to_string(s.fabric.hosts()) + " hosts at 100 Gbit/s in two sites of " +
                  std::to_string(site_hosts) + ", joined by " + std::to_string(spines) +
                  " long links of " + json::number(s.fabric.long_link.gbps) +
                  " Gbit/s (10 ms round trip, 1% of frames lost in bursts of 4), parameter "
                  "server (ResNet-50), web-search background at 30% load, kept TCP connections "
                  "with Linux's RTO floor";
  return s;
}

}  // namespace

std::vector<std::string> scenario_names() {
  return {"small",     "small-ring",   "scale-16",     "scale-48",
          "paper-144", "long-link-16", "long-link-144"};
}

bool named_scenario(const std::string& name, ScenarioConfig* scenario) {
  if (name == "small") {
    *scenario = scale_scenario("small", 4, 4, 2);
    scenario->description =
        "CI: 16 hosts at 100 Gbit/s, parameter server (ResNet-50, 2 iterations), web-search "
        "background at 30% load";
    scenario->workload.iterations = 2;
    scenario->workload.size_scale = 0.01;
  } else if (name == "small-ring") {
    *scenario = scale_scenario("small-ring", 4, 4, 2);
    scenario->description =
        "16 hosts at 100 Gbit/s, ring all-reduce (ResNet-50), web-search background at 30% load";
    scenario->workload.collective = Collective::kRingAllReduce;
    scenario->workload.iterations = 2;
  } else if (name == "scale-16") {
    *scenario = scale_scenario(name, 4, 4, 2);
  } else if (name == "scale-48") {
    *scenario = scale_scenario(name, 6, 8, 4);
  } else if (name == "paper-144") {
    *scenario = scale_scenario(name, 9, 16, 4);
  } else if (name == "long-link-16") {
    *scenario = long_link_scenario(name, 4, 4, 2);
  } else if (name == "long-link-144") {
    *scenario = long_link_scenario(name, 12, 12, 4);
  } else {
    return false;
  }
  return true;
}

std::string invalid_long_link(const LongLinkConfig& l) {
  // The same bounds as `dlcp demo`'s long-link options.
  if (!(l.rtt_ms > 0 && l.rtt_ms <= 2000)) return "--long-link-rtt-ms must lie in (0, 2000]";
  if (!(l.random_loss >= 0 && l.random_loss <= 0.5)) {
    return "--long-link-random-loss must lie in [0, 0.5]";
  }
  if (!(l.burst_loss >= 0 && l.burst_loss <= 0.5)) {
    return "--long-link-burst-loss must lie in [0, 0.5]";
  }
  // A burst is at least the one frame that starts it.
  if (!(l.burst_length >= 1 && l.burst_length <= 1000)) {
    return "--long-link-burst-length must lie in [1, 1000]";
  }
  if (!(l.gbps >= 0.001 && l.gbps <= 100000)) return "--long-link-gbps must lie in [0.001, 100000]";
  return "";
}

std::string invalid_setting(const ScenarioConfig& s) {
  const WorkloadConfig& w = s.workload;
  if (w.iterations < 1) return "--iterations must be at least 1";
  // Every host is either a server or a worker, and a job needs at least one of each.
  if (w.servers < 1 || w.servers >= s.fabric.hosts()) {
    return "--servers must lie between 1 and " + std::to_string(s.fabric.hosts() - 1) +
           " (the hosts less one worker)";
  }
  if (!(w.size_scale > 0 && w.size_scale <= 1)) return "--size-scale must lie in (0, 1]";
  if (!(w.loss_budget >= 0 && w.loss_budget < 0.5)) return "--budget must lie in [0, 0.5)";
  // A factor of 0 or less would make compute take no time or run backwards.
  if (!(w.compute_jitter >= 0 && w.compute_jitter < 1)) {
    return "--compute-jitter must lie in [0, 1)";
  }
  // Above about 95% of every host's link the Poisson background alone never drains.
  if (!(s.background.load >= 0 && s.background.load <= 0.95)) return "--load must lie in [0, 0.95]";
  // Below a microsecond is below the clock granularity; above a second no flow would finish.
  // The library's MessageOptions::deadline is whole milliseconds, at least 1.
  if (!(s.dlcp.deadline_ms >= 1 && s.dlcp.deadline_ms <= 3600000)) {
    return "--deadline-ms must lie in [1, 3600000]";
  }
  if (!(s.dlcp.parity_members >= 0 && s.dlcp.parity_members <= 255)) {
    return "--parity must lie in [0, 255]";
  }
  if (!(s.tcp.min_rto_us >= 1 && s.tcp.min_rto_us <= 1e6)) {
    return "--tcp-min-rto-us must lie in [1, 1000000]";
  }
  const FabricConfig& f = s.fabric;
  // A spine that loses everything is a dead link, which routing would take out of service.
  if (!(f.gray_loss >= 0 && f.gray_loss < 1)) return "--gray-loss must lie in [0, 1)";
  // Below the simulator's nanosecond clock nothing is delayed; above 100 ms no round would end.
  if (!(f.link_delay_us >= 0.001 && f.link_delay_us <= 100000)) {
    return "--link-delay-us must lie in [0.001, 100000]";
  }
  if (f.sites > 1) {
    if (const std::string problem = invalid_long_link(f.long_link); !problem.empty()) {
      return problem;
    }
  }
  // DCTCP needs room above its marking threshold K, and drop-eligible packets need a whole frame.
  const std::uint64_t least = f.ecn_mark_bytes_per_100g + 2ull * f.mtu_bytes;
  if (f.buffer_bytes_per_100g < least) {
    return "--buffer-kib must be at least " + std::to_string((least + 1023) / 1024) +
           " (DCTCP's marking threshold of " + std::to_string(f.ecn_mark_bytes_per_100g) +
           " bytes plus two frames)";
  }
  return "";
}

std::string scenario_json(const ScenarioConfig& s) {
  std::ostringstream out;
  const FabricConfig& f = s.fabric;
  const WorkloadConfig& w = s.workload;
  // Written only when changed, so that documents from before the option still merge.
  const std::string best_effort = f.best_effort_shared ? "" : ",\"best_effort_shared\":false";
  std::string long_link;
  if (f.sites > 1) {
    const LongLinkConfig& l = f.long_link;
    long_link = ",\"sites\":" + std::to_string(f.sites) +
                ",\"long_link\":{\"rtt_ms\":" + json::number(l.rtt_ms) +
                ",\"gbps\":" + json::number(l.gbps) +
                ",\"random_loss\":" + json::number(l.random_loss) +
                ",\"burst_loss\":" + json::number(l.burst_loss) +
                ",\"burst_length\":" + json::number(l.burst_length) + "}";
  }
  const std::string pacing = s.dlcp.shared_band_pacer ? ",\"dlcp_pacing\":\"shared_band\"" : "";
  const std::string deadline = s.dlcp.deadline_ms == DlcpSimConfig{}.deadline_ms
                                   ? ""
                                   : ",\"dlcp_deadline_ms\":" + std::to_string(s.dlcp.deadline_ms);
  const std::string parity = s.dlcp.parity_members == 0 ? ""
                                                        : ",\"dlcp_parity_members\":" +
                                                              std::to_string(s.dlcp.parity_members);
  std::string pfabric_rto;
  if (s.tcp.pfabric_timer == RetransmitTimer::kFixed) pfabric_rto = ",\"pfabric_rto\":\"fixed\"";
  if (s.tcp.pfabric_timer == RetransmitTimer::kProbe) pfabric_rto = ",\"pfabric_rto\":\"probe\"";
  const std::string tcp_close =
      s.tcp.early_fin_close == EarlyFinClose::kRfc793 ? ",\"tcp_close\":\"rfc793\"" : "";
  const std::string rto_floor =
      s.tcp.rto_floor == RtoFloor::kLinux ? ",\"tcp_rto_floor\":\"linux\"" : "";
  const std::string tcp_connections = s.tcp.gradient_connections == GradientConnections::kPersistent
                                          ? ",\"tcp_connections\":\"persistent\""
                                          : "";
  out << "{\"hosts\":" << f.hosts() << long_link << ",\"leaves\":" << f.leaves
      << ",\"hosts_per_leaf\":" << f.hosts_per_leaf << ",\"spines\":" << f.spines
      << ",\"host_link_gbps\":" << json::number(f.host_link_gbps)
      << ",\"fabric_link_gbps\":" << json::number(f.fabric_link_gbps)
      << ",\"link_delay_us\":" << json::number(f.link_delay_us) << ",\"mtu_bytes\":" << f.mtu_bytes
      << ",\"buffer_bytes_per_100g\":" << f.buffer_bytes_per_100g
      << ",\"drop_eligible_share\":" << json::number(f.drop_eligible_share)
      << ",\"eligible_threshold\":" << (f.eligible_per_queue ? "\"queue\"" : "\"port\"")
      << ",\"ecn_mark_bytes_per_100g\":" << f.ecn_mark_bytes_per_100g
      << ",\"gray_loss\":" << json::number(f.gray_loss)
      << ",\"mark_per_queue\":" << (f.mark_per_queue ? "true" : "false") << best_effort
      << ",\"dlcp_ecn_capable\":" << (s.dlcp.ecn_capable ? "true" : "false")
      << ",\"dlcp_drop_precedence\":" << (s.dlcp.drop_precedence ? "true" : "false")
      << ",\"dlcp_receiver_share\":" << (s.dlcp.receiver_share ? "true" : "false") << pacing
      << deadline << parity << ",\"collective\":"
      << json::quote(w.collective == Collective::kParameterServer ? "parameter_server"
                                                                  : "ring_allreduce")
      << ",\"model\":" << json::quote(w.model) << ",\"servers\":" << w.servers
      << ",\"slicing\":" << json::quote(slicing_name(w.slicing))
      << ",\"iterations\":" << w.iterations << ",\"size_scale\":" << json::number(w.size_scale)
      << ",\"forward_ms_full_size\":" << json::number(w.forward_ms)
      << ",\"backward_factor\":" << json::number(w.backward_factor)
      << ",\"compute_jitter\":" << json::number(w.compute_jitter)
      << ",\"loss_budget\":" << json::number(w.loss_budget)
      << ",\"protected_share\":" << json::number(s.policy.protected_share()) << ",\"background\":"
      << json::quote(s.background.sizes == FlowSizes::kWebSearch ? "web_search" : "data_mining")
      << ",\"background_load\":" << json::number(s.background.load)
      << ",\"dlcp_paths\":" << s.dlcp.paths
      << ",\"tcp_min_rto_us\":" << json::number(s.tcp.min_rto_us)
      << ",\"pfabric_min_rto_us\":" << json::number(s.tcp.pfabric_min_rto_us) << pfabric_rto
      << tcp_close << tcp_connections << rto_floor << ",\"seed\":" << s.seed
      << ",\"model_revision\":" << kModelRevision << "}";
  return out.str();
}

}  // namespace dlcp::sim
