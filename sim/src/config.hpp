// Everything a scenario sets, in one place, with the units in the names.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "library.hpp"

namespace dlcp::sim {

// The transports compared. kDlcp carries gradients with the library's policy; the others carry
// them over TCP with per-flow ECMP.
enum class Scheme { kDlcp, kDctcp, kNewReno, kPfabric, kPias };

const char* scheme_name(Scheme scheme);
bool parse_scheme(const std::string& name, Scheme* scheme);

// The long links between two sites (FabricConfig::sites = 2): spine k of site 0 is joined to spine
// k of site 1, as the testbed joins them, each link with this delay, rate and loss.
struct LongLinkConfig {
  double rtt_ms = 10.0;      // the round trip the long link adds, half of it each way
  double gbps = 200.0;       // each long link's rate
  double random_loss = 0.0;  // share of frames lost independently
  // Share of frames lost in bursts (a Gilbert-Elliott channel that loses every frame in its bad
  // state) of burst_length frames on average.
  double burst_loss = 0.0;
  double burst_length = 4.0;
};

struct FabricConfig {
  // 1: one leaf-spine fabric. 2: the hosts and leaves split into two sites in index order, each
  // with `spines` spines of its own, and the sites' spines joined pairwise by long links.
  int sites = 1;
  int leaves = 4;  // over all sites
  int hosts_per_leaf = 4;
  int spines = 2;  // per site
  double host_link_gbps = 100.0;
  double fabric_link_gbps = 400.0;
  double link_delay_us = 1.0;
  std::uint32_t mtu_bytes = 9000;  // jumbo frames: 6x fewer packets (events) than 1500
  // Per-port buffer of a 100 Gbit/s port; ports of other rates get proportionally more or less.
  std::uint32_t buffer_bytes_per_100g = 400000;
  double drop_eligible_share = 0.5;  // drop-eligible packets refused above this share of buffer
  // What that share is compared with: the packet's own band's queue (true, the default), as the
  // library's switch plan has it (a small queue of its own per class in tc, WRED on each queue in
  // SONiC), or the whole port's occupancy (--eligible-threshold port, as in documents without
  // the key eligible_threshold), where another class's backlog refuses them.
  bool eligible_per_queue = true;
  std::uint32_t ecn_mark_bytes_per_100g = 100000;  // DCTCP's K
  std::uint32_t host_buffer_bytes = 8u << 20;      // host NIC queue; hosts never drop in practice
  // Gray failure, as in the testbed: spine 0 drops this share of the packets it forwards, at
  // random and whatever their class (a flaky link or line card, not congestion). 0 = healthy.
  double gray_loss = 0.0;
  // Ports mark ECN on their band's queue, as commodity switches mark per egress queue; false
  // marks on the whole port (--ablate queue-marking). PIAS always marks per port.
  bool mark_per_queue = true;
  // The policy's least urgent class (dlcp's back layers) shares the best-effort band with all
  // the policy does not know (the background), as the library's switch plan has it; false moves
  // that class up a band (--ablate best-effort-sharing), leaving best effort alone, last.
  bool best_effort_shared = true;
  LongLinkConfig long_link;  // sites = 2 only

  int hosts() const { return leaves * hosts_per_leaf; }
};

enum class Collective { kParameterServer, kRingAllReduce };
// How the parameter server assigns layers to servers: slices each to the least loaded server so
// far, in layer order (the default) or largest first, which balances the servers' loads more
// closely; or sharded, every layer over all servers, as the library's parameter server cuts a
// buffer (see server_slices.hpp).
enum class Slicing { kLayerOrder, kLargestFirst, kSharded };

const char* slicing_name(Slicing slicing);  // as the JSON config names it

struct WorkloadConfig {
  Collective collective = Collective::kParameterServer;
  std::string model = "resnet50";  // models/<model>.json
  int servers = 2;                 // parameter servers (the remaining hosts are workers)
  Slicing slicing = Slicing::kLayerOrder;
  int iterations = 3;
  // Gradient bytes and compute time are multiplied by this (see docs/simulation.md, Scaling).
  double size_scale = 0.05;
  // Forward-pass compute of the whole model at full size; backward takes backward_factor times it.
  double forward_ms = 30.0;
  double backward_factor = 2.0;
  // Each worker's compute runs at a speed drawn per iteration, uniform in [1 - x, 1 + x]. Real
  // workers drift apart; with 0 they run in lockstep and every incast starts in one instant.
  double compute_jitter = 0.0;
  double loss_budget = 0.01;               // dlcp: per-tensor budget on the push/reduce side
  std::uint64_t bucket_bytes = 25u << 20;  // ring all-reduce bucket, before size_scale
};

enum class FlowSizes { kWebSearch, kDataMining };

struct BackgroundConfig {
  FlowSizes sizes = FlowSizes::kWebSearch;
  double load = 0.3;  // offered load as a share of every host's link capacity; 0 = none
  std::uint64_t max_flow_bytes = 30u << 20;  // data mining's 1 GB tail is cut here
};

struct DlcpSimConfig {
  int paths = 8;  // UDP source ports sprayed over (TransportOptions::paths)
  double feedback_interval_us = 20.0;
  double quiet_before_report_us = 50.0;  // a few queueing delays of a full port
  double control_retry_us = 300.0;
  // Ablations (--ablate), to measure what each mechanism of the policy contributes:
  bool ecn_capable = true;      // protected packets ECN-capable, as the policy's DSCP table says
  bool drop_precedence = true;  // drop-eligible packets carry the drop-eligible DSCP
  bool receiver_share = true;   // receivers offer each sender a fair share of their link
  // CE marks on packets in the band the background shares cut only a pacer of their own, which
  // those packets pass as well as the peer's; marks elsewhere cut the peer's (--dlcp-pacing).
  bool shared_band_pacer = false;
  // Every message's MessageOptions::deadline (the library's default). A message that misses it
  // fails, and a failure ends the run at once (--deadline-ms).
  std::int64_t deadline_ms = 30000;
  // Protected packets per parity packet (TransportOptions::parity_members; 0: none, --parity).
  int parity_members = 0;
};

// How a TCP socket retransmits after a timeout (tcp_socket.hpp, pfabric_tcp_socket.hpp).
enum class RetransmitTimer {
  kBackoff,  // ns-3's TCP: the timeout doubles on each consecutive timeout
  kFixed,    // the expired timeout repeats, as pFabric's rate control does
  kProbe,    // kFixed, and pFabric's probe mode after kProbeAfterTimeouts consecutive timeouts
};
// How a TCP receiver closes when its peer's FIN arrived before the last of the data
// (tcp_socket.hpp).
enum class EarlyFinClose {
  kNs3,     // ns-3.37's: the receiver's Close() comes first, and it is left in CLOSE_WAIT for good
  kRfc793,  // as RFC 793: CLOSING, then TIME_WAIT, then closed
};
// How the TCP baselines carry gradient messages (background flows always take a connection each).
enum class GradientConnections {
  // A connection per message, as the DCTCP, pFabric and PIAS evaluations model flows: every
  // message pays a handshake and starts from the initial window.
  kPerMessage,
  // A connection per pair of hosts, kept for the whole run, as Gloo, ps-lite and NCCL keep theirs.
  // It carries one message at a time, the most urgent waiting one first (class, then post order,
  // as dlcp's send queue), and keeps Linux's window rules (tcp_socket.hpp).
  kPersistent,
};
// Where TCP's minimum retransmission timeout applies (TcpConfig::min_rto_us).
enum class RtoFloor {
  // RFC 6298's, as ns-3 has it: max(floor, srtt + 4 x rttvar). With a floor far below the round
  // trip, as a data-centre floor is below a long link's, the timeout sits just above the round
  // trip (which ns-3 measures in whole milliseconds), and a kept connection across the long link
  // times out again and again (docs/simulation.md, "Transports").
  kRfc6298,
  // Linux's: srtt + max(floor, 4 x rttvar), never nearer the round trip than the floor.
  kLinux,
};

// The consecutive timeouts after which a pFabric flow probes with one-byte segments: prob_cap_ in
// the ns-2 scripts published with pFabric and PIAS.
constexpr std::uint32_t kProbeAfterTimeouts = 5;

struct TcpConfig {
  double min_rto_us = 200.0;                // DCTCP, NewReno, PIAS
  double pfabric_min_rto_us = 45.0;         // pFabric's small fixed timeout (about 3-4 RTTs)
  std::uint32_t pfabric_initial_cwnd = 16;  // about one bandwidth-delay product of segments
  // ns-3's TCP doubles the timeout on consecutive timeouts (of a SYN too); pFabric's rate control
  // does not. Backoff by default so far: every stored result was made with it.
  RetransmitTimer pfabric_timer = RetransmitTimer::kBackoff;
  // Every TCP socket's (all schemes' and the background's). ns-3's by default so far: every
  // stored result was made with it.
  EarlyFinClose early_fin_close = EarlyFinClose::kNs3;
  // A connection per message by default: every stored result was made so.
  GradientConnections gradient_connections = GradientConnections::kPerMessage;
  // RFC 6298's by default: every stored one-site result was made with it.
  RtoFloor rto_floor = RtoFloor::kRfc6298;
};

struct ScenarioConfig {
  std::string name;
  std::string description;
  FabricConfig fabric;
  WorkloadConfig workload;
  BackgroundConfig background;
  DlcpSimConfig dlcp;
  TcpConfig tcp;
  library::Policy policy;  // the library's defaults
  std::vector<Scheme> schemes{Scheme::kDlcp, Scheme::kDctcp, Scheme::kNewReno, Scheme::kPfabric,
                              Scheme::kPias};
  double max_sim_ms = 2000.0;  // safety stop; unfinished iterations are reported as such
  std::uint64_t seed = 1;
};

}  // namespace dlcp::sim
