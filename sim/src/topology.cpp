#include "topology.hpp"

#include <cmath>
#include <string>

#include "dscp_classifier.hpp"
#include "ns3/boolean.h"
#include "ns3/internet-stack-helper.h"
#include "ns3/ipv4-address-helper.h"
#include "ns3/point-to-point-helper.h"
#include "ns3/pointer.h"
#include "ns3/string.h"
#include "ns3/traffic-control-helper.h"
#include "ns3/uinteger.h"

namespace dlcp::sim {

namespace {

struct PortLimits {
  std::uint32_t buffer = 0;
  std::uint32_t drop_eligible = 0;
  std::uint32_t mark = 0;  // 0 = no marking
  bool mark_per_band = true;
  bool share_best_effort = true;
  bool eligible_per_band = true;
};

PortLimits switch_port_limits(const FabricConfig& fabric, const PortBehaviour& behaviour,
                              double gbps) {
  const double scale = gbps / 100.0;
  PortLimits limits;
  limits.buffer = static_cast<std::uint32_t>(fabric.buffer_bytes_per_100g * scale);
  limits.drop_eligible = static_cast<std::uint32_t>(limits.buffer * fabric.drop_eligible_share);
  if (behaviour.ecn_marking) {
    limits.mark = static_cast<std::uint32_t>(fabric.ecn_mark_bytes_per_100g * scale);
  }
  limits.mark_per_band = behaviour.mark_per_band;
  limits.share_best_effort = behaviour.share_best_effort;
  limits.eligible_per_band = behaviour.eligible_per_band;
  return limits;
}

ns3::Ptr<DropPrecedenceQueueDisc> install_port(ns3::Ptr<ns3::NetDevice> device,
                                               const PortLimits& limits, bool evict,
                                               const library::Policy& policy) {
  ns3::TrafficControlHelper helper;
  const std::uint16_t handle = helper.SetRootQueueDisc(
      "dlcp::sim::DropPrecedenceQueueDisc", "BufferBytes", ns3::UintegerValue(limits.buffer),
      "DropEligibleBytes", ns3::UintegerValue(limits.drop_eligible), "MarkBytes",
      ns3::UintegerValue(limits.mark), "MarkPerBand", ns3::BooleanValue(limits.mark_per_band),
      "EvictLowerPriority", ns3::BooleanValue(evict), "DropEligiblePerBand",
      ns3::BooleanValue(limits.eligible_per_band));
  helper.AddPacketFilter(handle, "dlcp::sim::DscpPacketFilter");
  ns3::QueueDiscContainer installed = helper.Install(device);
  auto port = ns3::DynamicCast<DropPrecedenceQueueDisc>(installed.Get(0));
  port->set_policy(policy);
  ns3::DynamicCast<DscpPacketFilter>(port->GetPacketFilter(0))
      ->set_policy(policy, limits.share_best_effort);
  return port;
}

std::uint32_t interface_of(ns3::Ptr<ns3::NetDevice> device) {
  auto ipv4 = device->GetNode()->GetObject<ns3::Ipv4>();
  return static_cast<std::uint32_t>(ipv4->GetInterfaceForDevice(device));
}

PortCounters sum_counters(const std::vector<ns3::Ptr<DropPrecedenceQueueDisc>>& ports) {
  PortCounters total;
  for (const auto& port : ports) {
    const PortCounters& c = port->counters();
    total.dropped_drop_eligible += c.dropped_drop_eligible;
    total.dropped_full += c.dropped_full;
    total.evicted += c.evicted;
    total.marked += c.marked;
    total.enqueued += c.enqueued;
    for (std::size_t band = 0; band < c.enqueued_by_band.size(); ++band) {
      total.enqueued_by_band[band] += c.enqueued_by_band[band];
    }
    total.arrived += c.arrived;
    total.dropped_random += c.dropped_random;
  }
  return total;
}

// Joins spine k of site 0 to spine k of site 1 (two sites) by a long link: a point-to-point link
// with the long link's rate and one-way delay, a switch port at each end, and its loss on each
// receiving device, each direction drawing from its own stream of the run's seed.
void add_long_links(const FabricConfig& fabric, const library::Policy& policy,
                    const PortBehaviour& behaviour, std::uint64_t seed,
                    ns3::Ipv4AddressHelper& addresses, std::vector<NodePorts>& spine_ports,
                    Topology& topo) {
  const LongLinkConfig& config = fabric.long_link;
  ns3::PointToPointHelper link;
  link.SetDeviceAttribute("DataRate", ns3::StringValue(std::to_string(config.gbps) + "Gbps"));
  link.SetDeviceAttribute("Mtu", ns3::UintegerValue(fabric.mtu_bytes));
  link.SetChannelAttribute("Delay",
                           ns3::TimeValue(ns3::NanoSeconds(one_way_delay_ns(config.rtt_ms))));
  link.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", ns3::StringValue("1p"));
  const PortLimits port = switch_port_limits(fabric, behaviour, config.gbps);
  for (int k = 0; k < fabric.spines; ++k) {
    const int near = k;
    const int far = fabric.spines + k;
    ns3::NetDeviceContainer devices = link.Install(topo.spines.Get(near), topo.spines.Get(far));
    for (int end = 0; end < 2; ++end) {
      topo.switch_ports.push_back(
          install_port(devices.Get(end), port, behaviour.evict_lower_priority, policy));
      topo.long_link_ports.push_back(topo.switch_ports.back());
      auto loss = ns3::CreateObject<LongLinkLoss>();
      // Streams apart from the gray spine's ((seed << 16) + leaf).
      loss->configure(config.random_loss, config.burst_loss, config.burst_length,
                      (seed << 16) + 0x8000u + 2u * static_cast<std::uint64_t>(k) +
                          static_cast<std::uint64_t>(end));
      devices.Get(end)->SetAttribute("ReceiveErrorModel", ns3::PointerValue(loss));
      topo.long_link_losses.push_back(loss);
    }
    ns3::Ipv4InterfaceContainer ifaces = addresses.Assign(devices);
    addresses.NewNetwork();
    for (int end = 0; end < 2; ++end) {
      NodePorts& spine = spine_ports[static_cast<std::size_t>(end == 0 ? near : far)];
      const std::uint32_t interface = interface_of(devices.Get(end));
      spine.long_link = interface;
      spine.neighbour[interface] = ifaces.GetAddress(static_cast<std::uint32_t>(1 - end));
    }
  }
}

}  // namespace

std::int64_t one_way_delay_ns(double rtt_ms) {
  return std::llround(rtt_ms * 1e6 / 2.0);
}

PortCounters Topology::switch_counters() const {
  return sum_counters(switch_ports);
}

PortCounters Topology::gray_counters() const {
  return sum_counters(gray_ports);
}

PortCounters Topology::long_link_port_counters() const {
  return sum_counters(long_link_ports);
}

LongLinkLossCounters Topology::long_link_loss_counters() const {
  LongLinkLossCounters total;
  for (const auto& loss : long_link_losses) {
    const LongLinkLossCounters& c = loss->counters();
    total.frames += c.frames;
    total.dropped_random += c.dropped_random;
    total.dropped_burst += c.dropped_burst;
    total.bursts += c.bursts;
  }
  return total;
}

Topology build_topology(const FabricConfig& fabric, const library::Policy& policy,
                        const PortBehaviour& behaviour, std::uint64_t seed) {
  Topology topo;
  const int num_hosts = fabric.hosts();
  topo.hosts.Create(static_cast<std::uint32_t>(num_hosts));
  topo.leaves.Create(static_cast<std::uint32_t>(fabric.leaves));
  topo.spines.Create(static_cast<std::uint32_t>(fabric.sites * fabric.spines));
  topo.host_rate_bps = fabric.host_link_gbps * 1e9;
  topo.bands = policy.switch_bands(/*best_effort_alone=*/!behaviour.share_best_effort);

  ns3::InternetStackHelper stack;
  stack.SetRoutingHelper(EcmpRoutingHelper());
  stack.Install(topo.hosts);
  stack.Install(topo.leaves);
  stack.Install(topo.spines);

  const std::string delay = std::to_string(fabric.link_delay_us) + "us";
  auto make_link = [&](double gbps) {
    ns3::PointToPointHelper link;
    link.SetDeviceAttribute("DataRate", ns3::StringValue(std::to_string(gbps) + "Gbps"));
    link.SetDeviceAttribute("Mtu", ns3::UintegerValue(fabric.mtu_bytes));
    link.SetChannelAttribute("Delay", ns3::StringValue(delay));
    // The queue disc holds the backlog; the device keeps one packet so priorities take effect.
    link.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", ns3::StringValue("1p"));
    return link;
  };
  ns3::PointToPointHelper host_link = make_link(fabric.host_link_gbps);
  ns3::PointToPointHelper fabric_link = make_link(fabric.fabric_link_gbps);

  const PortLimits leaf_down = switch_port_limits(fabric, behaviour, fabric.host_link_gbps);
  // A host never drops its own packets, but it marks like a switch port. ns-3's TCP has no
  // equivalent of Linux's TCP small queues, so without marks an ECN flow whose bottleneck is its
  // own NIC grows its window up to the socket buffer: megabytes of standing queue in front of
  // every other packet of that band.
  PortLimits host_nic = leaf_down;
  host_nic.buffer = host_nic.drop_eligible = fabric.host_buffer_bytes;
  const PortLimits fabric_port = switch_port_limits(fabric, behaviour, fabric.fabric_link_gbps);

  auto fabric_map = std::make_shared<FabricMap>();
  std::vector<NodePorts> host_ports(static_cast<std::size_t>(num_hosts));
  std::vector<NodePorts> leaf_ports(static_cast<std::size_t>(fabric.leaves));
  std::vector<NodePorts> spine_ports(static_cast<std::size_t>(fabric.sites * fabric.spines));
  const int leaves_per_site = fabric.leaves / fabric.sites;
  for (int l = 0; l < fabric.leaves; ++l) {
    leaf_ports[l].role = NodePorts::Role::kLeaf;
    leaf_ports[l].leaf = l;
  }
  for (std::size_t s = 0; s < spine_ports.size(); ++s) {
    spine_ports[s].role = NodePorts::Role::kSpine;
    spine_ports[s].site = static_cast<int>(s) / fabric.spines;
    spine_ports[s].to_leaf.resize(static_cast<std::size_t>(fabric.leaves));
  }
  if (fabric.sites > 1) {
    for (int l = 0; l < fabric.leaves; ++l) fabric_map->site_of_leaf.push_back(l / leaves_per_site);
  }

  ns3::Ipv4AddressHelper addresses("10.0.0.0", "255.255.255.252");

  topo.host_address.resize(static_cast<std::size_t>(num_hosts));
  topo.leaf_of_host.resize(static_cast<std::size_t>(num_hosts));
  topo.site_of_host.resize(static_cast<std::size_t>(num_hosts));
  for (int h = 0; h < num_hosts; ++h) {
    const int leaf = h / fabric.hosts_per_leaf;
    ns3::NetDeviceContainer devices = host_link.Install(topo.hosts.Get(h), topo.leaves.Get(leaf));
    // Queue discs go on before addresses, or Ipv4AddressHelper installs its default one.
    install_port(devices.Get(0), host_nic, false, policy);
    topo.switch_ports.push_back(
        install_port(devices.Get(1), leaf_down, behaviour.evict_lower_priority, policy));
    ns3::Ipv4InterfaceContainer ifaces = addresses.Assign(devices);
    addresses.NewNetwork();
    topo.host_address[h] = ifaces.GetAddress(0);
    topo.leaf_of_host[h] = leaf;
    topo.site_of_host[h] = leaf / leaves_per_site;
    fabric_map->host_of_address[ifaces.GetAddress(0).Get()] = h;

    const std::uint32_t host_if = interface_of(devices.Get(0));
    const std::uint32_t leaf_if = interface_of(devices.Get(1));
    host_ports[h].uplinks.push_back(host_if);
    host_ports[h].neighbour[host_if] = ifaces.GetAddress(1);
    leaf_ports[leaf].to_host[h] = leaf_if;
    leaf_ports[leaf].neighbour[leaf_if] = ifaces.GetAddress(0);
  }
  fabric_map->leaf_of_host = topo.leaf_of_host;

  for (int l = 0; l < fabric.leaves; ++l) {
    const int first_spine = l / leaves_per_site * fabric.spines;  // of the leaf's own site
    for (int s = first_spine; s < first_spine + fabric.spines; ++s) {
      ns3::NetDeviceContainer devices = fabric_link.Install(topo.leaves.Get(l), topo.spines.Get(s));
      for (int end = 0; end < 2; ++end) {
        topo.switch_ports.push_back(
            install_port(devices.Get(end), fabric_port, behaviour.evict_lower_priority, policy));
      }
      // The gray spine loses packets on its way down to every leaf, so every packet that
      // crosses it risks the loss once, as with the testbed's nftables rule on one bridge.
      if (s == 0 && fabric.gray_loss > 0) {
        topo.gray_ports.push_back(topo.switch_ports.back());
        topo.gray_ports.back()->set_random_loss(fabric.gray_loss,
                                                (seed << 16) + static_cast<std::uint64_t>(l));
      }
      ns3::Ipv4InterfaceContainer ifaces = addresses.Assign(devices);
      addresses.NewNetwork();
      const std::uint32_t leaf_if = interface_of(devices.Get(0));
      const std::uint32_t spine_if = interface_of(devices.Get(1));
      leaf_ports[l].uplinks.push_back(leaf_if);
      leaf_ports[l].neighbour[leaf_if] = ifaces.GetAddress(1);
      spine_ports[s].to_leaf[l] = spine_if;
      spine_ports[s].neighbour[spine_if] = ifaces.GetAddress(0);
    }
  }
  if (fabric.sites > 1) {
    topo.long_link_round_trip = 2 * ns3::NanoSeconds(one_way_delay_ns(fabric.long_link.rtt_ms));
    add_long_links(fabric, policy, behaviour, seed, addresses, spine_ports, topo);
  }

  auto configure = [&](ns3::Ptr<ns3::Node> node, NodePorts ports, std::uint32_t salt) {
    auto routing =
        ns3::DynamicCast<EcmpRouting>(node->GetObject<ns3::Ipv4>()->GetRoutingProtocol());
    routing->configure(fabric_map, std::move(ports), salt);
  };
  for (int h = 0; h < num_hosts; ++h) configure(topo.hosts.Get(h), host_ports[h], 0);
  // Each switch hashes with its own salt, as real switches seed ECMP differently (otherwise
  // every stage would make correlated choices).
  for (int l = 0; l < fabric.leaves; ++l) {
    configure(topo.leaves.Get(l), leaf_ports[l], 0x1000u + static_cast<std::uint32_t>(l));
  }
  for (int s = 0; s < fabric.sites * fabric.spines; ++s) {
    configure(topo.spines.Get(s), spine_ports[s], 0x2000u + static_cast<std::uint32_t>(s));
  }
  return topo;
}

}  // namespace dlcp::sim
