// Leaf-spine fabric: hosts on leaves, every leaf linked to every spine, a DropPrecedenceQueueDisc
// with a DscpPacketFilter on every port, and ECMP routing by flow hash. With two sites
// (FabricConfig::sites), each site is such a fabric, and spine k of site 0 is joined to spine k of
// site 1 by a long link (FabricConfig::long_link) with the same ports and a LongLinkLoss on its
// receiving devices. One link per spine pair, as the testbed has it: a site's spines reach the
// other site without a hop through one gateway switch, and the sites' traffic keeps its ECMP
// spread over all of them.
#pragma once

#include <memory>
#include <vector>

#include "config.hpp"
#include "drop_precedence_queue_disc.hpp"
#include "ecmp_routing.hpp"
#include "long_link_loss.hpp"
#include "ns3/ipv4-address.h"
#include "ns3/node-container.h"
#include "ns3/nstime.h"

namespace dlcp::sim {

// How switch ports behave for the scheme under test.
struct PortBehaviour {
  bool ecn_marking = false;  // DCTCP and PIAS need it; dlcp's background TCP is DCTCP too
  // Mark on the packet's own queue (band) rather than on the whole port (FabricConfig's
  // mark_per_queue; PIAS's authors chose per-port marking for PIAS, which it keeps).
  bool mark_per_band = true;
  bool evict_lower_priority = false;  // pFabric-like
  // The policy's least urgent class shares the best-effort band (FabricConfig's
  // best_effort_shared).
  bool share_best_effort = true;
  // Drop-eligible packets are refused on their own band's occupancy rather than the port's
  // (FabricConfig's eligible_per_queue).
  bool eligible_per_band = true;
};

struct Topology {
  ns3::NodeContainer hosts;
  ns3::NodeContainer leaves;
  ns3::NodeContainer spines;
  std::vector<ns3::Ipv4Address> host_address;
  std::vector<int> leaf_of_host;
  std::vector<int> site_of_host;
  // What the long link adds to the round trip between hosts of different sites (0: one site).
  ns3::Time long_link_round_trip;
  std::vector<ns3::Ptr<DropPrecedenceQueueDisc>> switch_ports;
  std::vector<ns3::Ptr<DropPrecedenceQueueDisc>> gray_ports;  // the gray spine's, when it fails
  // Both ends' ports onto every long link (also among switch_ports), and the losses on their wires.
  std::vector<ns3::Ptr<DropPrecedenceQueueDisc>> long_link_ports;
  std::vector<ns3::Ptr<LongLinkLoss>> long_link_losses;
  double host_rate_bps = 0.0;
  // The switch plan's bands the ports classify by (PortBehaviour::share_best_effort).
  library::SwitchBands bands;

  ns3::Time added_round_trip(int a, int b) const {
    return site_of_host[static_cast<std::size_t>(a)] == site_of_host[static_cast<std::size_t>(b)]
               ? ns3::Time(0)
               : long_link_round_trip;
  }
  PortCounters switch_counters() const;
  PortCounters gray_counters() const;
  PortCounters long_link_port_counters() const;
  LongLinkLossCounters long_link_loss_counters() const;
};

// The long link's one-way delay for a round trip of `rtt_ms`: half of it, to the nanosecond.
std::int64_t one_way_delay_ns(double rtt_ms);

// `seed` seeds the gray spine's random loss (FabricConfig::gray_loss) and the long links' losses.
Topology build_topology(const FabricConfig& fabric, const library::Policy& policy,
                        const PortBehaviour& behaviour, std::uint64_t seed);

}  // namespace dlcp::sim
