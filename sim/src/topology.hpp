// Leaf-spine fabric: hosts on leaves, every leaf linked to every spine, a DropPrecedenceQueueDisc
// with a DscpPacketFilter on every port, and ECMP routing by flow hash.
#pragma once

#include <memory>
#include <vector>

#include "config.hpp"
#include "drop_precedence_queue_disc.hpp"
#include "ecmp_routing.hpp"
#include "ns3/ipv4-address.h"
#include "ns3/node-container.h"

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
  std::vector<ns3::Ptr<DropPrecedenceQueueDisc>> switch_ports;
  std::vector<ns3::Ptr<DropPrecedenceQueueDisc>> gray_ports;  // the gray spine's, when it fails
  double host_rate_bps = 0.0;
  // The switch plan's bands the ports classify by (PortBehaviour::share_best_effort).
  library::SwitchBands bands;

  PortCounters switch_counters() const;
  PortCounters gray_counters() const;
};

// `seed` seeds the gray spine's random loss (FabricConfig::gray_loss).
Topology build_topology(const FabricConfig& fabric, const library::Policy& policy,
                        const PortBehaviour& behaviour, std::uint64_t seed);

}  // namespace dlcp::sim
