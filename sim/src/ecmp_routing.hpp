// Leaf-spine routing with ECMP by flow hash, as commodity switches do it.
//
// A leaf forwards to a local host directly and hashes (source and destination address, protocol,
// ports) over its spine uplinks; a spine forwards to the destination's leaf. Because the hash
// covers the ports, a TCP connection keeps one path (per-flow ECMP) while dlcp, which sprays its
// packets over several UDP source ports exactly as the library does, spreads them over all paths.
// With two sites a spine sends what is bound for the other site's leaves over its long link to the
// other site's spine of the same index, which forwards it to the leaf.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "ns3/ipv4-routing-helper.h"
#include "ns3/ipv4-routing-protocol.h"
#include "ns3/ipv4.h"

namespace dlcp::sim {

// Where every host sits, shared by all routers of a fabric.
struct FabricMap {
  std::unordered_map<std::uint32_t, int> host_of_address;
  std::vector<int> leaf_of_host;
  std::vector<int> site_of_leaf;  // empty with one site
};

// What one node needs to forward: interface indices and the neighbour's address on each.
struct NodePorts {
  enum class Role { kHost, kLeaf, kSpine } role = Role::kHost;
  int leaf = -1;                                   // kLeaf: its own index
  std::unordered_map<int, std::uint32_t> to_host;  // kLeaf: host -> interface
  std::vector<std::uint32_t> uplinks;              // kHost: the leaf; kLeaf: one per spine
  std::vector<std::uint32_t> to_leaf;              // kSpine: leaf of its site -> interface
  int site = 0;                                    // kSpine: its site
  std::int64_t long_link = -1;  // kSpine: the interface to the other site's spine; -1: none
  std::unordered_map<std::uint32_t, ns3::Ipv4Address> neighbour;  // interface -> next hop
};

class EcmpRouting : public ns3::Ipv4RoutingProtocol {
 public:
  static ns3::TypeId GetTypeId();

  void configure(std::shared_ptr<const FabricMap> fabric, NodePorts ports, std::uint32_t salt);

  ns3::Ptr<ns3::Ipv4Route> RouteOutput(ns3::Ptr<ns3::Packet> packet, const ns3::Ipv4Header& header,
                                       ns3::Ptr<ns3::NetDevice> output_device,
                                       ns3::Socket::SocketErrno& error) override;
  bool RouteInput(ns3::Ptr<const ns3::Packet> packet, const ns3::Ipv4Header& header,
                  ns3::Ptr<const ns3::NetDevice> input_device, UnicastForwardCallback forward,
                  MulticastForwardCallback multicast, LocalDeliverCallback deliver,
                  ErrorCallback error) override;
  void NotifyInterfaceUp(std::uint32_t) override {}
  void NotifyInterfaceDown(std::uint32_t) override {}
  void NotifyAddAddress(std::uint32_t, ns3::Ipv4InterfaceAddress) override {}
  void NotifyRemoveAddress(std::uint32_t, ns3::Ipv4InterfaceAddress) override {}
  void SetIpv4(ns3::Ptr<ns3::Ipv4> ipv4) override { ipv4_ = ipv4; }
  void PrintRoutingTable(ns3::Ptr<ns3::OutputStreamWrapper> stream,
                         ns3::Time::Unit unit) const override;

 private:
  // The interface towards `destination` for a packet whose L4 header starts `packet` (may be
  // null, as for a TCP connect); -1 when unreachable.
  int choose_interface(ns3::Ipv4Address destination, const ns3::Ipv4Header& header,
                       ns3::Ptr<const ns3::Packet> packet) const;
  ns3::Ptr<ns3::Ipv4Route> make_route(ns3::Ipv4Address destination, int interface) const;

  ns3::Ptr<ns3::Ipv4> ipv4_;
  std::shared_ptr<const FabricMap> fabric_;
  NodePorts ports_;
  std::uint32_t salt_ = 0;
};

class EcmpRoutingHelper : public ns3::Ipv4RoutingHelper {
 public:
  EcmpRoutingHelper* Copy() const override { return new EcmpRoutingHelper(*this); }
  ns3::Ptr<ns3::Ipv4RoutingProtocol> Create(ns3::Ptr<ns3::Node> node) const override;
};

}  // namespace dlcp::sim
