// The pFabric-like baseline's retransmissions on a two-host link that loses what the test says:
// ns-3's TCP doubles the timeout on consecutive timeouts of a SYN and of data, the
// PfabricTcpSocket repeats the same timeout and, in probe mode, re-sends one byte at a time.
#include <gtest/gtest.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "ns3/error-model.h"
#include "ns3/inet-socket-address.h"
#include "ns3/nstime.h"
#include "ns3/packet.h"
#include "ns3/simulator.h"
#include "ns3/tcp-header.h"
#include "ns3/uinteger.h"
#include "pfabric_tcp_socket.hpp"
#include "two_host_link.hpp"

namespace dlcp::sim {
namespace {

using ns3::MicroSeconds;

// Drops every packet of at least `min_bytes` on the device it is attached to, and every packet
// whatsoever from `drop_all_from` until `drop_all_until`.
class ReceiverDrops : public ns3::ErrorModel {
 public:
  static ns3::TypeId GetTypeId() {
    static ns3::TypeId tid = ns3::TypeId("dlcp::sim::ReceiverDrops")
                                 .SetParent<ns3::ErrorModel>()
                                 .AddConstructor<ReceiverDrops>();
    return tid;
  }
  std::uint32_t min_bytes = 0;
  ns3::Time drop_all_from;
  ns3::Time drop_all_until;

 private:
  bool DoCorrupt(ns3::Ptr<ns3::Packet> packet) override {
    const ns3::Time now = ns3::Simulator::Now();
    return packet->GetSize() >= min_bytes || (now >= drop_all_from && now < drop_all_until);
  }
  void DoReset() override {}
};

constexpr std::uint16_t kPort = 7000;
constexpr std::uint32_t kSegmentBytes = 1000;
const ns3::Time kConnTimeout = MicroSeconds(100);
const ns3::Time kMinRto = MicroSeconds(300);

struct DataSend {
  std::uint32_t offset = 0;  // of its first byte, from the message's first byte
  std::uint32_t bytes = 0;
};

struct Sends {
  bool syn = false;  // record the SYNs, otherwise the first data segment's (re)transmissions
  bool have_first = false;
  ns3::SequenceNumber32 first;
  std::vector<ns3::Time> times;
  std::vector<DataSend> data;  // every data segment, in order
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
  sends->data.push_back(
      {static_cast<std::uint32_t>(header.GetSequenceNumber() - sends->first), packet->GetSize()});
  if (header.GetSequenceNumber() == sends->first) sends->times.push_back(ns3::Simulator::Now());
}

// What the client sent of a `message_bytes` message over `duration` of a link whose receiver drops
// every packet of at least `drop_from_bytes`, and every packet in [`drop_all.first`,
// `drop_all.second`): the times of its SYNs (`syn`) or of its first data segment (otherwise), and
// the payload of each data segment.
Sends sends_of(RetransmitTimer timer, bool syn, std::uint32_t drop_from_bytes,
               ns3::Time duration = ns3::MilliSeconds(3),
               std::pair<ns3::Time, ns3::Time> drop_all = {},
               std::uint32_t message_bytes = 4 * kSegmentBytes) {
  auto loss = ns3::CreateObject<ReceiverDrops>();
  loss->min_bytes = drop_from_bytes;
  loss->drop_all_from = drop_all.first;
  loss->drop_all_until = drop_all.second;
  const TwoHostLink link = make_two_host_link(nullptr, loss);
  const ns3::NodeContainer& nodes = link.nodes;

  auto configure = [](ns3::Ptr<ns3::Socket> socket) {
    socket->SetAttribute("ConnTimeout", ns3::TimeValue(kConnTimeout));
    socket->SetAttribute("MinRto", ns3::TimeValue(kMinRto));
    socket->SetAttribute("ClockGranularity", ns3::TimeValue(MicroSeconds(1)));
    socket->SetAttribute("SegmentSize", ns3::UintegerValue(kSegmentBytes));
    socket->SetAttribute("ConnCount", ns3::UintegerValue(1000));  // as the experiment sets them
    socket->SetAttribute("DataRetries", ns3::UintegerValue(1000));
  };
  auto listener = create_tcp_socket(nodes.Get(1), timer, EarlyFinClose::kNs3);
  configure(listener);
  listener->Bind(ns3::InetSocketAddress(ns3::Ipv4Address::GetAny(), kPort));
  listener->Listen();
  auto client = create_tcp_socket(nodes.Get(0), timer, EarlyFinClose::kNs3);
  configure(client);
  Sends sends;
  sends.syn = syn;
  client->TraceConnectWithoutContext("Tx", ns3::MakeBoundCallback(&record, &sends));
  client->Bind();
  const ns3::InetSocketAddress server(link.interfaces.GetAddress(1), kPort);
  // Once the simulation runs: the nodes' traffic-control layers learn their devices only then.
  ns3::Simulator::ScheduleNow([client, server, message_bytes] {
    client->Connect(server);
    client->Send(ns3::Create<ns3::Packet>(message_bytes));
  });
  ns3::Simulator::Stop(duration);
  ns3::Simulator::Run();
  ns3::Simulator::Destroy();
  return sends;
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

TEST(PfabricTcpSocket, BaseSocketDoublesTheSynTimeout) {
  const auto gaps = gaps_of(sends_of(RetransmitTimer::kBackoff, true, kDropAll).times, 4);
  ASSERT_EQ(gaps.size(), 4u);
  EXPECT_EQ(gaps[0], kConnTimeout);
  EXPECT_EQ(gaps[1], kConnTimeout * 2);
  EXPECT_EQ(gaps[2], kConnTimeout * 4);
  EXPECT_EQ(gaps[3], kConnTimeout * 8);
}

TEST(PfabricTcpSocket, RepeatsTheSynTimeout) {
  // 5 ms at a 100 us timeout: 50 SYNs instead of 6, beyond the 32 at which ns-3's backoff
  // shift would overflow.
  const auto times = sends_of(RetransmitTimer::kFixed, true, kDropAll, ns3::MilliSeconds(5)).times;
  EXPECT_EQ(times.size(), 50u);
  for (const ns3::Time& gap : gaps_of(times, 60)) EXPECT_EQ(gap, kConnTimeout);
}

TEST(PfabricTcpSocket, BaseSocketDoublesTheDataTimeout) {
  const auto gaps = gaps_of(sends_of(RetransmitTimer::kBackoff, false, kDropData).times, 3);
  ASSERT_EQ(gaps.size(), 3u);
  EXPECT_EQ(gaps[1], gaps[0] * 2);
  EXPECT_EQ(gaps[2], gaps[0] * 4);
  EXPECT_GE(gaps[0], kMinRto);
}

TEST(PfabricTcpSocket, RepeatsTheDataTimeout) {
  const auto sends = sends_of(RetransmitTimer::kFixed, false, kDropData);
  const auto gaps = gaps_of(sends.times, 8);
  ASSERT_EQ(gaps.size(), 8u);
  EXPECT_GE(gaps[0], kMinRto);
  for (const ns3::Time& gap : gaps) EXPECT_EQ(gap, gaps[0]);
  // Without probe mode every re-send is a full segment.
  for (const DataSend& send : sends.data) EXPECT_EQ(send.bytes, kSegmentBytes);
}

// The payloads of the sends of the message's first byte, in order.
std::vector<std::uint32_t> first_segment_sends(const Sends& sends) {
  std::vector<std::uint32_t> bytes;
  for (const DataSend& send : sends.data) {
    if (send.offset == 0) bytes.push_back(send.bytes);
  }
  return bytes;
}

// The send after the last send of the message's first byte.
DataSend send_after_first_segment(const Sends& sends) {
  std::size_t last = 0;
  for (std::size_t i = 0; i < sends.data.size(); ++i) {
    if (sends.data[i].offset == 0) last = i;
  }
  return last + 1 < sends.data.size() ? sends.data[last + 1] : DataSend{};
}

TEST(PfabricTcpSocket, ProbesWithOneByteAfterFiveTimeoutsUntilAcknowledged) {
  // Full segments are always lost, one byte gets through. The first segment and its re-sends
  // after timeouts 1-4 are full, the re-send after the 5th is a probe, on the same timer; its
  // acknowledgement ends probe mode, and the rest goes out in full segments again.
  const auto sends = sends_of(RetransmitTimer::kProbe, false, kDropData);
  std::vector<std::uint32_t> expected(kProbeAfterTimeouts, kSegmentBytes);
  expected.push_back(1);
  EXPECT_EQ(first_segment_sends(sends), expected);
  const DataSend next = send_after_first_segment(sends);
  EXPECT_EQ(next.offset, 1u);
  EXPECT_EQ(next.bytes, kSegmentBytes);
  const auto gaps = gaps_of(sends.times, 5);
  ASSERT_EQ(gaps.size(), 5u);
  for (const ns3::Time& gap : gaps) EXPECT_EQ(gap, gaps[0]);
}

TEST(PfabricTcpSocket, KeepsProbingWhileProbesAreLost) {
  // Everything is lost from just after the handshake until 2.5 ms, the probes too: they go on,
  // one byte each, until one gets through.
  const auto sends = sends_of(RetransmitTimer::kProbe, false, kDropData, ns3::MilliSeconds(4),
                              {MicroSeconds(100), MicroSeconds(2500)});
  const auto first = first_segment_sends(sends);
  ASSERT_GE(first.size(), kProbeAfterTimeouts + 2);
  for (std::size_t i = 0; i < first.size(); ++i) {
    EXPECT_EQ(first[i], i < kProbeAfterTimeouts ? kSegmentBytes : 1u) << "send " << i;
  }
  const DataSend next = send_after_first_segment(sends);
  EXPECT_EQ(next.offset, 1u);
  EXPECT_EQ(next.bytes, kSegmentBytes);
}

TEST(PfabricTcpSocket, SendsOneProbePerTimeout) {
  // A message shorter than a segment: after the 5th timeout the window would let its 800 bytes go
  // out as 800 one-byte segments; one probe goes out, and after its acknowledgement the other 799
  // bytes in one segment.
  const std::uint32_t message = 800;
  const auto sends =
      sends_of(RetransmitTimer::kProbe, false, kDropData, ns3::MilliSeconds(3), {}, message);
  std::vector<std::uint32_t> expected(kProbeAfterTimeouts, message);
  expected.push_back(1);
  EXPECT_EQ(first_segment_sends(sends), expected);
  const DataSend next = send_after_first_segment(sends);
  EXPECT_EQ(next.offset, 1u);
  EXPECT_EQ(next.bytes, message - 1);
}

}  // namespace
}  // namespace dlcp::sim
