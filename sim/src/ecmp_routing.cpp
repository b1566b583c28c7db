#include "ecmp_routing.hpp"

#include <ostream>

#include "ns3/ipv4-route.h"
#include "ns3/node.h"
#include "ns3/object-base.h"
#include "ns3/output-stream-wrapper.h"

namespace dlcp::sim {

NS_OBJECT_ENSURE_REGISTERED(EcmpRouting);

namespace {

constexpr std::uint8_t kTcp = 6;
constexpr std::uint8_t kUdp = 17;

std::uint64_t mix(std::uint64_t x) {  // splitmix64 finaliser: cheap and well spread
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

ns3::TypeId EcmpRouting::GetTypeId() {
  static ns3::TypeId tid = ns3::TypeId("dlcp::sim::EcmpRouting")
                               .SetParent<ns3::Ipv4RoutingProtocol>()
                               .SetGroupName("DlcpSim")
                               .AddConstructor<EcmpRouting>();
  return tid;
}

void EcmpRouting::configure(std::shared_ptr<const FabricMap> fabric, NodePorts ports,
                            std::uint32_t salt) {
  fabric_ = std::move(fabric);
  ports_ = std::move(ports);
  salt_ = salt;
}

int EcmpRouting::choose_interface(ns3::Ipv4Address destination, const ns3::Ipv4Header& header,
                                  ns3::Ptr<const ns3::Packet> packet) const {
  if (ports_.role == NodePorts::Role::kHost) {
    return ports_.uplinks.empty() ? -1 : static_cast<int>(ports_.uplinks.front());
  }
  const auto found = fabric_->host_of_address.find(destination.Get());
  if (found == fabric_->host_of_address.end()) return -1;
  const int host = found->second;
  const int leaf = fabric_->leaf_of_host[static_cast<std::size_t>(host)];
  if (ports_.role == NodePorts::Role::kSpine) {
    if (ports_.long_link >= 0 &&
        fabric_->site_of_leaf[static_cast<std::size_t>(leaf)] != ports_.site) {
      return static_cast<int>(ports_.long_link);
    }
    return static_cast<int>(ports_.to_leaf[static_cast<std::size_t>(leaf)]);
  }
  if (leaf == ports_.leaf) return static_cast<int>(ports_.to_host.at(host));

  std::uint64_t key =
      (static_cast<std::uint64_t>(header.GetSource().Get()) << 32) | header.GetDestination().Get();
  key = mix(key ^ (static_cast<std::uint64_t>(header.GetProtocol()) << 56) ^ salt_);
  const std::uint8_t protocol = header.GetProtocol();
  if (packet && (protocol == kTcp || protocol == kUdp) && packet->GetSize() >= 4) {
    std::uint8_t l4_ports[4];
    packet->CopyData(l4_ports, 4);  // source and destination port lead both headers
    const std::uint64_t port_pair = (std::uint64_t{l4_ports[0]} << 24) |
                                    (std::uint64_t{l4_ports[1]} << 16) |
                                    (std::uint64_t{l4_ports[2]} << 8) | l4_ports[3];
    key = mix(key ^ port_pair);
  }
  return static_cast<int>(ports_.uplinks[key % ports_.uplinks.size()]);
}

ns3::Ptr<ns3::Ipv4Route> EcmpRouting::make_route(ns3::Ipv4Address destination,
                                                 int interface) const {
  const auto index = static_cast<std::uint32_t>(interface);
  auto route = ns3::Create<ns3::Ipv4Route>();
  route->SetDestination(destination);
  route->SetSource(ipv4_->GetAddress(index, 0).GetLocal());
  route->SetGateway(ports_.neighbour.at(index));
  route->SetOutputDevice(ipv4_->GetNetDevice(index));
  return route;
}

ns3::Ptr<ns3::Ipv4Route> EcmpRouting::RouteOutput(ns3::Ptr<ns3::Packet> packet,
                                                  const ns3::Ipv4Header& header,
                                                  ns3::Ptr<ns3::NetDevice>,
                                                  ns3::Socket::SocketErrno& error) {
  const int interface = choose_interface(header.GetDestination(), header, packet);
  if (interface < 0) {
    error = ns3::Socket::ERROR_NOROUTETOHOST;
    return nullptr;
  }
  error = ns3::Socket::ERROR_NOTERROR;
  return make_route(header.GetDestination(), interface);
}

bool EcmpRouting::RouteInput(ns3::Ptr<const ns3::Packet> packet, const ns3::Ipv4Header& header,
                             ns3::Ptr<const ns3::NetDevice> input_device,
                             UnicastForwardCallback forward, MulticastForwardCallback,
                             LocalDeliverCallback deliver, ErrorCallback error) {
  const std::int32_t input = ipv4_->GetInterfaceForDevice(input_device);
  if (ipv4_->IsDestinationAddress(header.GetDestination(), static_cast<std::uint32_t>(input))) {
    if (!deliver.IsNull()) deliver(packet, header, static_cast<std::uint32_t>(input));
    return true;
  }
  if (ports_.role == NodePorts::Role::kHost) return false;  // hosts do not forward
  const int interface = choose_interface(header.GetDestination(), header, packet);
  if (interface < 0) {
    error(packet, header, ns3::Socket::ERROR_NOROUTETOHOST);
    return false;
  }
  forward(make_route(header.GetDestination(), interface), packet, header);
  return true;
}

void EcmpRouting::PrintRoutingTable(ns3::Ptr<ns3::OutputStreamWrapper> stream,
                                    ns3::Time::Unit) const {
  *stream->GetStream() << "dlcp-sim ECMP routing, " << ports_.uplinks.size() << " uplinks\n";
}

ns3::Ptr<ns3::Ipv4RoutingProtocol> EcmpRoutingHelper::Create(ns3::Ptr<ns3::Node>) const {
  return ns3::CreateObject<EcmpRouting>();
}

}  // namespace dlcp::sim
