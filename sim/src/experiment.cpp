#include "experiment.hpp"

#include <chrono>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <stdexcept>

#include "background.hpp"
#include "dlcp_transport.hpp"
#include "json.hpp"
#include "model_profile.hpp"
#include "ns3/boolean.h"
#include "ns3/config.h"
#include "ns3/double.h"
#include "ns3/enum.h"
#include "ns3/nstime.h"
#include "ns3/rng-seed-manager.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/tcp-congestion-ops.h"
#include "ns3/tcp-dctcp.h"
#include "ns3/tcp-l4-protocol.h"
#include "ns3/tcp-socket-base.h"
#include "ns3/uinteger.h"
#include "progress.hpp"
#include "stats.hpp"
#include "tcp_socket.hpp"
#include "tcp_transport.hpp"
#include "topology.hpp"
#include "workload.hpp"

namespace dlcp::sim {

namespace {

bool uses_dctcp(Scheme scheme) {
  // dlcp's network runs DCTCP for everything that is not dlcp (the background traffic).
  return scheme == Scheme::kDlcp || scheme == Scheme::kDctcp || scheme == Scheme::kPias;
}

void configure_tcp(const ScenarioConfig& scenario, Scheme scheme) {
  using ns3::Config::SetDefault;
  const TcpConfig& tcp = scenario.tcp;
  // Segment = MTU - IP (20) - TCP with timestamps (32), rounded down for safety.
  const std::uint32_t segment = scenario.fabric.mtu_bytes - 60;
  SetDefault("ns3::TcpSocket::SegmentSize", ns3::UintegerValue(segment));
  SetDefault("ns3::TcpSocket::SndBufSize", ns3::UintegerValue(4u << 20));
  SetDefault("ns3::TcpSocket::RcvBufSize", ns3::UintegerValue(4u << 20));
  SetDefault("ns3::TcpSocket::DelAckCount", ns3::UintegerValue(1));
  // TIME_WAIT lasts 2 MSL (default 240 s); closed connections would pile up as endpoints that
  // every received packet is demultiplexed against. A data-centre RTT is microseconds.
  SetDefault("ns3::TcpSocketBase::MaxSegLifetime", ns3::DoubleValue(50e-6));
  SetDefault("ns3::TcpSocket::ConnCount", ns3::UintegerValue(1000));
  SetDefault("ns3::TcpSocket::DataRetries", ns3::UintegerValue(1000));
  const bool pfabric = scheme == Scheme::kPfabric;
  const double min_rto_us = pfabric ? tcp.pfabric_min_rto_us : tcp.min_rto_us;
  SetDefault("ns3::TcpSocket::ConnTimeout", ns3::TimeValue(micros(4 * min_rto_us)));
  SetDefault("ns3::TcpSocketBase::MinRto", ns3::TimeValue(micros(min_rto_us)));
  SetDefault("ns3::TcpSocketBase::ClockGranularity",
             ns3::TimeValue(rto_clock_granularity(tcp.rto_floor, micros(min_rto_us))));
  SetDefault("ns3::RttEstimator::InitialEstimation", ns3::TimeValue(micros(min_rto_us)));
  SetDefault("ns3::TcpSocket::InitialCwnd",
             ns3::UintegerValue(pfabric ? tcp.pfabric_initial_cwnd : 10));
  if (uses_dctcp(scheme)) {
    SetDefault("ns3::TcpL4Protocol::SocketType", ns3::TypeIdValue(ns3::TcpDctcp::GetTypeId()));
    SetDefault("ns3::TcpSocketBase::UseEcn", ns3::StringValue("On"));
  } else {
    SetDefault("ns3::TcpL4Protocol::SocketType", ns3::TypeIdValue(ns3::TcpNewReno::GetTypeId()));
  }
}

std::string losses_json(const TcpLossCounters& c) {
  std::ostringstream out;
  out << "{\"connections\":" << c.connections
      << ",\"syn_retransmissions\":" << c.syn_retransmissions() << ",\"timeouts\":" << c.timeouts
      << ",\"fast_recoveries\":" << c.fast_recoveries << ",\"probes\":" << c.probes << "}";
  return out.str();
}

// Frames on the long links' wires and their losses, and their ports' counters (also among the
// switches').
std::string long_link_json(const Topology& topology) {
  const LongLinkLossCounters wire = topology.long_link_loss_counters();
  const PortCounters ports = topology.long_link_port_counters();
  std::ostringstream out;
  out << "{\"frames\":" << wire.frames << ",\"dropped_random\":" << wire.dropped_random
      << ",\"dropped_burst\":" << wire.dropped_burst << ",\"bursts\":" << wire.bursts
      << ",\"port_enqueued\":" << ports.enqueued
      << ",\"port_dropped_drop_eligible\":" << ports.dropped_drop_eligible
      << ",\"port_dropped_full\":" << ports.dropped_full << ",\"port_evicted\":" << ports.evicted
      << ",\"port_ce_marked\":" << ports.marked << "}";
  return out.str();
}

std::string stats_json(const std::vector<double>& samples, std::uint64_t started) {
  std::ostringstream out;
  out << "{\"mean\":" << json::number(mean_of(samples))
      << ",\"p50\":" << json::number(percentile_of(samples, 50))
      << ",\"p99\":" << json::number(percentile_of(samples, 99)) << ",\"count\":" << samples.size()
      << ",\"started\":" << started << "}";
  return out.str();
}

}  // namespace

std::string run_scheme(const ScenarioConfig& scenario, Scheme scheme, const std::string& flows_path,
                       double progress_interval_s) {
  const auto wall_start = std::chrono::steady_clock::now();
  ns3::RngSeedManager::SetSeed(static_cast<std::uint32_t>(scenario.seed));
  configure_tcp(scenario, scheme);

  PortBehaviour ports;
  ports.ecn_marking = uses_dctcp(scheme);
  ports.mark_per_band = scenario.fabric.mark_per_queue && scheme != Scheme::kPias;
  ports.evict_lower_priority = scheme == Scheme::kPfabric;
  ports.share_best_effort = scenario.fabric.best_effort_shared;
  ports.eligible_per_band = scenario.fabric.eligible_per_queue;
  Topology topology = build_topology(scenario.fabric, scenario.policy, ports, scenario.seed);
  const int hosts = scenario.fabric.hosts();

  FlowLog log;
  log.keep_records = !flows_path.empty();
  ProgressReporter progress(
      scenario.name + " " + scheme_name(scheme), progress_interval_s,
      [] {
        return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
            .count();
      },
      std::cerr);
  log.after_finished = [&] {
    if (!progress.due()) return;
    ProgressSnapshot now;
    now.sim_ms = ns3::Simulator::Now().GetSeconds() * 1e3;
    now.events = ns3::Simulator::GetEventCount();
    now.gradient_finished = log.gradient_fct_us.size();
    now.gradient_started = log.gradient_started;
    now.background_finished = log.background_fct_us.size();
    const TcpSocketCount sockets = count_tcp_sockets(topology.hosts);
    now.tcp_sockets = sockets.open;
    now.tcp_close_wait = sockets.close_wait;
    progress.report(now);
  };
  TcpPriority priority = TcpPriority::kNone;
  if (scheme == Scheme::kPfabric) priority = TcpPriority::kRemainingSize;
  if (scheme == Scheme::kPias) priority = TcpPriority::kBytesSent;
  const RetransmitTimer timer =
      scheme == Scheme::kPfabric ? scenario.tcp.pfabric_timer : RetransmitTimer::kBackoff;
  TcpTransport tcp(topology, scenario.policy, priority, timer, scenario.tcp.early_fin_close,
                   scenario.tcp.gradient_connections, log);
  std::unique_ptr<DlcpTransport> dlcp;
  MessageTransport* gradients = &tcp;
  if (scheme == Scheme::kDlcp) {
    dlcp = std::make_unique<DlcpTransport>(topology, scenario.policy, scenario.dlcp, log,
                                           scenario.seed);
    gradients = dlcp.get();
  }

  const ModelProfile model = load_model(scenario.workload.model);
  BackgroundTraffic background(scenario.background, hosts, topology.host_rate_bps, tcp,
                               scenario.seed + 17);
  bool finished = false;
  auto on_done = [&] {
    finished = true;
    background.stop();
    ns3::Simulator::Stop();
  };
  // The compute jitter has its own stream, so that turning it on leaves the background's flows
  // as they were.
  const std::uint64_t jitter_seed = scenario.seed + 31;
  std::unique_ptr<TrainingJob> job =
      scenario.workload.collective == Collective::kParameterServer
          ? make_parameter_server_job(scenario.workload, model, hosts,
                                      dlcp_packet_floats(scenario.fabric.mtu_bytes), *gradients,
                                      jitter_seed, on_done)
          : make_ring_allreduce_job(scenario.workload, model, hosts, *gradients, jitter_seed,
                                    on_done);

  ns3::Simulator::Schedule(ns3::Seconds(0), [&] {
    background.start();
    job->start();
  });
  ns3::Simulator::Stop(micros(scenario.max_sim_ms * 1000.0));
  ns3::Simulator::Run();
  const double sim_ms = ns3::Simulator::Now().GetSeconds() * 1e3;
  const std::uint64_t events = ns3::Simulator::GetEventCount();

  const TrainingResult training = job->result();
  const PortCounters switches = topology.switch_counters();
  const PortCounters gray = topology.gray_counters();
  if (log.keep_records) {
    std::ofstream flows(flows_path);
    write_flow_csv(log.records, flows);
    if (!flows.flush()) throw std::runtime_error("cannot write " + flows_path);
  }
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();

  std::ostringstream out;
  out << "{\"scheme\":" << json::quote(scheme_name(scheme))
      << ",\"finished\":" << (finished ? "true" : "false")
      << ",\"iterations_expected\":" << training.iterations_expected
      << ",\"iterations_finished\":" << training.iterations_finished
      << ",\"iteration_ms\":" << stats_json(training.iteration_ms, training.iteration_ms.size())
      << ",\"iteration_mean_ms_by_iteration\":[";
  for (std::size_t k = 0; k < training.mean_ms_by_iteration.size(); ++k) {
    out << (k ? "," : "") << json::number(training.mean_ms_by_iteration[k]);
  }
  out << "]"
      << ",\"gradient_fct_us\":" << stats_json(log.gradient_fct_us, log.gradient_started)
      << ",\"background_fct_us\":" << stats_json(log.background_fct_us, log.background_started)
      << ",\"switch\":{\"enqueued\":" << switches.enqueued
      << ",\"dropped_drop_eligible\":" << switches.dropped_drop_eligible
      << ",\"dropped_full\":" << switches.dropped_full << ",\"evicted\":" << switches.evicted
      << ",\"ce_marked\":" << switches.marked << ",\"gray_seen\":" << gray.arrived
      << ",\"gray_dropped\":" << gray.dropped_random << ",\"enqueued_by_band\":[";
  for (std::size_t band = 0; band < switches.enqueued_by_band.size(); ++band) {
    out << (band ? "," : "") << switches.enqueued_by_band[band];
  }
  out << "]}";
  if (scenario.fabric.sites > 1) {
    out << ",\"long_link\":" << long_link_json(topology);
  }
  out << ",\"tcp\":{\"gradient\":" << losses_json(tcp.loss_counters(FlowKind::kGradient))
      << ",\"background\":" << losses_json(tcp.loss_counters(FlowKind::kBackground)) << "}";
  if (dlcp) {
    const DlcpCounters c = dlcp->counters();
    out << ",\"dlcp\":{\"data_packets_sent\":" << c.data_packets_sent
        << ",\"retransmitted_packets\":" << c.retransmitted_packets
        << ",\"missing_reports\":" << c.missing_reports
        << ",\"messages_settled\":" << c.messages_settled
        << ",\"messages_settled_with_loss\":" << c.messages_settled_with_loss
        << ",\"entries_missing_share\":"
        << json::number(c.entries_total ? static_cast<double>(c.entries_missing) /
                                              static_cast<double>(c.entries_total)
                                        : 0.0);
    if (scenario.dlcp.shared_band_pacer) out << ",\"shared_band_marks\":" << c.shared_band_marks;
    out << ",\"messages_failed\":" << c.messages_failed
        << ",\"control_retransmissions\":" << c.control_retransmissions;
    if (scenario.dlcp.parity_members > 0) {
      out << ",\"parity_sent\":" << c.parity_sent << ",\"packets_rebuilt\":" << c.packets_rebuilt;
    }
    if (!c.first_failure.empty()) out << ",\"first_failure\":" << json::quote(c.first_failure);
    out << "}";
  }
  out << ",\"sim_ms\":" << json::number(sim_ms) << ",\"events\":" << events
      << ",\"wall_s\":" << json::number(wall_s) << "}";
  ns3::Simulator::Destroy();
  return out.str();
}

}  // namespace dlcp::sim
