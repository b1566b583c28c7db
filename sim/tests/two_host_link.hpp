// Two hosts on one 10 Gbit/s link with 10 us of delay, for the TCP socket tests: host 0 sends,
// host 1 receives, and each host's device passes what it receives through the test's error model.
#pragma once

#include "ns3/error-model.h"
#include "ns3/internet-stack-helper.h"
#include "ns3/ipv4-address-helper.h"
#include "ns3/nstime.h"
#include "ns3/point-to-point-helper.h"
#include "ns3/pointer.h"
#include "ns3/string.h"

namespace dlcp::sim {

struct TwoHostLink {
  ns3::NodeContainer nodes;
  ns3::NetDeviceContainer devices;
  ns3::Ipv4InterfaceContainer interfaces;
};

// A null error model drops nothing.
inline TwoHostLink make_two_host_link(ns3::Ptr<ns3::ErrorModel> sender_drops,
                                      ns3::Ptr<ns3::ErrorModel> receiver_drops) {
  TwoHostLink link;
  link.nodes.Create(2);
  ns3::PointToPointHelper point_to_point;
  point_to_point.SetDeviceAttribute("DataRate", ns3::StringValue("10Gbps"));
  point_to_point.SetChannelAttribute("Delay", ns3::TimeValue(ns3::MicroSeconds(10)));
  link.devices = point_to_point.Install(link.nodes);
  if (sender_drops) {
    link.devices.Get(0)->SetAttribute("ReceiveErrorModel", ns3::PointerValue(sender_drops));
  }
  if (receiver_drops) {
    link.devices.Get(1)->SetAttribute("ReceiveErrorModel", ns3::PointerValue(receiver_drops));
  }
  ns3::InternetStackHelper stack;
  stack.Install(link.nodes);
  ns3::Ipv4AddressHelper addresses("10.0.0.0", "255.255.255.0");
  link.interfaces = addresses.Assign(link.devices);
  return link;
}

}  // namespace dlcp::sim
