// The pFabric-like baseline's retransmission timer on a two-host link that loses what the test
// says: ns-3's TCP doubles the timeout on consecutive timeouts of a SYN and of data, the
// FixedRtoTcpSocket repeats the same timeout.
#include <gtest/gtest.h>

#include <vector>

#include "fixed_rto_tcp_socket.hpp"
#include "ns3/error-model.h"
#include "ns3/inet-socket-address.h"
#include "ns3/internet-stack-helper.h"
#include "ns3/ipv4-address-helper.h"
#include "ns3/nstime.h"
#include "ns3/packet.h"
#include "ns3/point-to-point-helper.h"
#include "ns3/pointer.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/tcp-header.h"
#include "ns3/uinteger.h"

namespace dlcp::sim {
namespace {

using ns3::MicroSeconds;

// Drops every packet of at least `min_bytes` on the device it is attached to.
class DropLargePackets : public ns3::ErrorModel {
 public:
  static ns3::TypeId GetTypeId() {
    static ns3::TypeId tid = ns3::TypeId("dlcp::sim::DropLargePackets")
                                 .SetParent<ns3::ErrorModel>()
                                 .AddConstructor<DropLargePackets>();
    return tid;
  }
  std::uint32_t min_bytes = 0;

 private:
  bool DoCorrupt(ns3::Ptr<ns3::Packet> packet) override { return packet->GetSize() >= min_bytes; }
  void DoReset() override {}
};

constexpr std::uint16_t kPort = 7000;
const ns3::Time kConnTimeout = MicroSeconds(100);
const ns3::Time kMinRto = MicroSeconds(300);

struct Sends {
  bool syn = false;  // record the SYNs, otherwise the first data segment's (re)transmissions
  bool have_first = false;
  ns3::SequenceNumber32 first;
  std::vector<ns3::Time> times;
};

void record(Sends* sends, ns3::Ptr<const ns3::Packet> packet, const ns3::TcpHeader& header,
            ns3::Ptr<const ns3::TcpSocketBase>) {
  const bool is_syn = (header.GetFlags() & ns3::TcpHeader::SYN) != 0;
  if (sends->syn) {
    if (is_syn) sends->times.push_back(ns3::Simulator::Now());
    return;
  }
  if (is_syn || packet->GetSize() == 0) return;
  if (!sends->have_first) {
    sends->have_first = true;
    sends->first = header.GetSequenceNumber();
  }
  if (header.GetSequenceNumber() == sends->first) sends->times.push_back(ns3::Simulator::Now());
}

// Times at which the client sent its SYN (`syn`) or its first data segment (otherwise), over
// `duration` of a link whose receiver drops every packet of at least `drop_from_bytes`.
std::vector<ns3::Time> sends_of(bool fixed_rto, bool syn, std::uint32_t drop_from_bytes,
                                ns3::Time duration = ns3::MilliSeconds(3)) {
  ns3::NodeContainer nodes;
  nodes.Create(2);
  ns3::PointToPointHelper link;
  link.SetDeviceAttribute("DataRate", ns3::StringValue("10Gbps"));
  link.SetChannelAttribute("Delay", ns3::TimeValue(MicroSeconds(10)));
  ns3::NetDeviceContainer devices = link.Install(nodes);
  auto loss = ns3::CreateObject<DropLargePackets>();
  loss->min_bytes = drop_from_bytes;
  devices.Get(1)->SetAttribute("ReceiveErrorModel", ns3::PointerValue(loss));
  ns3::InternetStackHelper stack;
  stack.Install(nodes);
  ns3::Ipv4AddressHelper addresses("10.0.0.0", "255.255.255.0");
  const ns3::Ipv4InterfaceContainer interfaces = addresses.Assign(devices);

  auto configure = [](ns3::Ptr<ns3::Socket> socket) {
    socket->SetAttribute("ConnTimeout", ns3::TimeValue(kConnTimeout));
    socket->SetAttribute("MinRto", ns3::TimeValue(kMinRto));
    socket->SetAttribute("ClockGranularity", ns3::TimeValue(MicroSeconds(1)));
    socket->SetAttribute("SegmentSize", ns3::UintegerValue(1000));
    socket->SetAttribute("ConnCount", ns3::UintegerValue(1000));  // as the experiment sets them
    socket->SetAttribute("DataRetries", ns3::UintegerValue(1000));
  };
  auto listener = create_tcp_socket(nodes.Get(1), fixed_rto);
  configure(listener);
  listener->Bind(ns3::InetSocketAddress(ns3::Ipv4Address::GetAny(), kPort));
  listener->Listen();
  auto client = create_tcp_socket(nodes.Get(0), fixed_rto);
  configure(client);
  Sends sends;
  sends.syn = syn;
  client->TraceConnectWithoutContext("Tx", ns3::MakeBoundCallback(&record, &sends));
  client->Bind();
  const ns3::InetSocketAddress server(interfaces.GetAddress(1), kPort);
  // Once the simulation runs: the nodes' traffic-control layers learn their devices only then.
  ns3::Simulator::ScheduleNow([client, server] {
    client->Connect(server);
    client->Send(ns3::Create<ns3::Packet>(4000));
  });
  ns3::Simulator::Stop(duration);
  ns3::Simulator::Run();
  ns3::Simulator::Destroy();
  return sends.times;
}

std::vector<ns3::Time> gaps_of(const std::vector<ns3::Time>& times, std::size_t count) {
  std::vector<ns3::Time> gaps;
  for (std::size_t i = 1; i < times.size() && gaps.size() < count; ++i) {
    gaps.push_back(times[i] - times[i - 1]);
  }
  return gaps;
}

// Every packet reaches the client side, so only the receiver's drops matter: 1 byte drops all,
// 500 bytes drops the data segments (1,000 bytes of payload) and lets the handshake through.
constexpr std::uint32_t kDropAll = 1;
constexpr std::uint32_t kDropData = 500;

TEST(FixedRtoTcpSocket, BaseSocketDoublesTheSynTimeout) {
  const auto gaps = gaps_of(sends_of(false, true, kDropAll), 4);
  ASSERT_EQ(gaps.size(), 4u);
  EXPECT_EQ(gaps[0], kConnTimeout);
  EXPECT_EQ(gaps[1], kConnTimeout * 2);
  EXPECT_EQ(gaps[2], kConnTimeout * 4);
  EXPECT_EQ(gaps[3], kConnTimeout * 8);
}

TEST(FixedRtoTcpSocket, RepeatsTheSynTimeout) {
  // 5 ms at a 100 us timeout: 50 SYNs instead of 6, beyond the 32 at which ns-3's backoff
  // shift would overflow.
  const auto times = sends_of(true, true, kDropAll, ns3::MilliSeconds(5));
  EXPECT_EQ(times.size(), 50u);
  for (const ns3::Time& gap : gaps_of(times, 60)) EXPECT_EQ(gap, kConnTimeout);
}

TEST(FixedRtoTcpSocket, BaseSocketDoublesTheDataTimeout) {
  const auto gaps = gaps_of(sends_of(false, false, kDropData), 3);
  ASSERT_EQ(gaps.size(), 3u);
  EXPECT_EQ(gaps[1], gaps[0] * 2);
  EXPECT_EQ(gaps[2], gaps[0] * 4);
  EXPECT_GE(gaps[0], kMinRto);
}

TEST(FixedRtoTcpSocket, RepeatsTheDataTimeout) {
  const auto times = sends_of(true, false, kDropData);
  const auto gaps = gaps_of(times, 8);
  ASSERT_EQ(gaps.size(), 8u);
  EXPECT_GE(gaps[0], kMinRto);
  for (const ns3::Time& gap : gaps) EXPECT_EQ(gap, gaps[0]);
}

}  // namespace
}  // namespace dlcp::sim
