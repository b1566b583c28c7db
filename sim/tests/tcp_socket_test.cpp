// A connection's close when the sender's FIN overtakes a lost data segment, on a two-host link:
// ns-3's own socket, and the SimTcpSocket with EarlyFinClose::kNs3, leave the receiver in
// CLOSE_WAIT for good; with kRfc793 it closes.
#include <gtest/gtest.h>

#include <vector>

#include "ns3/double.h"
#include "ns3/error-model.h"
#include "ns3/inet-socket-address.h"
#include "ns3/ipv4-header.h"
#include "ns3/nstime.h"
#include "ns3/packet.h"
#include "ns3/ppp-header.h"
#include "ns3/simulator.h"
#include "ns3/tcp-header.h"
#include "ns3/tcp-socket-factory.h"
#include "ns3/uinteger.h"
#include "tcp_socket.hpp"
#include "two_host_link.hpp"

namespace dlcp::sim {
namespace {

using ns3::MicroSeconds;
using ns3::TcpSocket;

constexpr std::uint16_t kPort = 7000;
constexpr std::uint32_t kSegmentBytes = 1000;
constexpr std::uint32_t kMessageBytes = 4 * kSegmentBytes;

// Drops the `nth` packet of at least `min_bytes` (a data segment) that reaches its device.
class DropNthSegment : public ns3::ErrorModel {
 public:
  static ns3::TypeId GetTypeId() {
    static ns3::TypeId tid = ns3::TypeId("dlcp::sim::DropNthSegment")
                                 .SetParent<ns3::ErrorModel>()
                                 .AddConstructor<DropNthSegment>();
    return tid;
  }
  std::uint32_t min_bytes = kSegmentBytes;
  std::uint32_t nth = 0;  // 0: none

 private:
  bool DoCorrupt(ns3::Ptr<ns3::Packet> packet) override {
    if (packet->GetSize() < min_bytes) return false;
    return ++seen_ == nth;
  }
  void DoReset() override {}
  std::uint32_t seen_ = 0;
};

// Drops the first FIN that reaches its device.
class DropFirstFin : public ns3::ErrorModel {
 public:
  static ns3::TypeId GetTypeId() {
    static ns3::TypeId tid = ns3::TypeId("dlcp::sim::DropFirstFin")
                                 .SetParent<ns3::ErrorModel>()
                                 .AddConstructor<DropFirstFin>();
    return tid;
  }
  bool enabled = false;

 private:
  bool DoCorrupt(ns3::Ptr<ns3::Packet> packet) override {
    if (!enabled || dropped_) return false;
    ns3::Ptr<ns3::Packet> copy = packet->Copy();
    ns3::PppHeader ppp;
    ns3::Ipv4Header ip;
    ns3::TcpHeader tcp;
    copy->RemoveHeader(ppp);
    copy->RemoveHeader(ip);
    copy->RemoveHeader(tcp);
    dropped_ = (tcp.GetFlags() & ns3::TcpHeader::FIN) != 0;
    return dropped_;
  }
  void DoReset() override {}
  bool dropped_ = false;
};

struct Receiver {
  std::uint32_t received = 0;
  std::vector<TcpSocket::TcpStates_t> states;
};

void record_state(std::vector<TcpSocket::TcpStates_t>* states, TcpSocket::TcpStates_t,
                  TcpSocket::TcpStates_t to) {
  states->push_back(to);
}

// Reads the message and closes once it has all of it, as the simulation's transport does.
void on_readable(Receiver* receiver, ns3::Ptr<ns3::Socket> socket) {
  while (auto packet = socket->Recv()) receiver->received += packet->GetSize();
  if (receiver->received == kMessageBytes) socket->Close();
}

void on_accept(Receiver* receiver, ns3::Ptr<ns3::Socket> socket, const ns3::Address&) {
  socket->TraceConnectWithoutContext("State",
                                     ns3::MakeBoundCallback(&record_state, &receiver->states));
  socket->SetRecvCallback(ns3::MakeBoundCallback(&on_readable, receiver));
}

// Which sockets both ends use.
enum class Sockets { kNs3Factory, kNs3Close, kRfc793Close };

struct Outcome {
  std::uint32_t received = 0;
  std::vector<TcpSocket::TcpStates_t> receiver_states;  // of the accepted socket, in order
  TcpSocketCount receiver_sockets;                      // open at the end, the listener too
  TcpSocketCount sender_sockets;
};

// A 4-segment message whose sender closes right after writing it (so the FIN rides on the last
// segment), over a link whose receiver drops the `drop_nth` data segment and whose sender drops
// the receiver's first FIN if `drop_fin`.
Outcome close_after(std::uint32_t drop_nth, Sockets kind, bool drop_fin = false) {
  auto loss = ns3::CreateObject<DropNthSegment>();
  loss->nth = drop_nth;
  auto fin_loss = ns3::CreateObject<DropFirstFin>();
  fin_loss->enabled = drop_fin;
  const TwoHostLink link = make_two_host_link(fin_loss, loss);
  const ns3::NodeContainer& nodes = link.nodes;

  auto make = [kind](ns3::Ptr<ns3::Node> node) {
    ns3::Ptr<ns3::Socket> socket =
        kind == Sockets::kNs3Factory
            ? ns3::Socket::CreateSocket(node, ns3::TcpSocketFactory::GetTypeId())
            : create_tcp_socket(
                  node, RetransmitTimer::kBackoff,
                  kind == Sockets::kRfc793Close ? EarlyFinClose::kRfc793 : EarlyFinClose::kNs3);
    socket->SetAttribute("SegmentSize", ns3::UintegerValue(kSegmentBytes));
    socket->SetAttribute("MinRto", ns3::TimeValue(MicroSeconds(200)));
    socket->SetAttribute("ClockGranularity", ns3::TimeValue(MicroSeconds(1)));
    socket->SetAttribute("MaxSegLifetime", ns3::DoubleValue(50e-6));  // as the experiment sets it
    return socket;
  };
  Receiver receiver;
  auto listener = make(nodes.Get(1));
  listener->Bind(ns3::InetSocketAddress(ns3::Ipv4Address::GetAny(), kPort));
  listener->Listen();
  listener->SetAcceptCallback(
      ns3::MakeNullCallback<bool, ns3::Ptr<ns3::Socket>, const ns3::Address&>(),
      ns3::MakeBoundCallback(&on_accept, &receiver));
  auto sender = make(nodes.Get(0));
  sender->Bind();
  const ns3::InetSocketAddress server(link.interfaces.GetAddress(1), kPort);
  ns3::Simulator::ScheduleNow([sender, server] {
    sender->Connect(server);
    sender->Send(ns3::Create<ns3::Packet>(kMessageBytes));
    sender->Close();
  });
  ns3::Simulator::Stop(ns3::MilliSeconds(20));
  ns3::Simulator::Run();
  Outcome outcome;
  outcome.received = receiver.received;
  outcome.receiver_states = receiver.states;
  outcome.receiver_sockets = count_tcp_sockets(ns3::NodeContainer(nodes.Get(1)));
  outcome.sender_sockets = count_tcp_sockets(ns3::NodeContainer(nodes.Get(0)));
  ns3::Simulator::Destroy();
  return outcome;
}

TEST(SimTcpSocket, Ns3CloseStaysInCloseWaitWhenTheFinOvertakesALostSegment) {
  // The 3rd segment is lost and the 4th, with the FIN, arrives first. When the 3rd's re-send
  // arrives the receiver closes (sending its FIN), and then ns-3 moves it to CLOSE_WAIT.
  for (Sockets kind : {Sockets::kNs3Factory, Sockets::kNs3Close}) {
    const Outcome outcome = close_after(3, kind);
    EXPECT_EQ(outcome.received, kMessageBytes);
    const std::vector<TcpSocket::TcpStates_t> expected = {TcpSocket::FIN_WAIT_1,
                                                          TcpSocket::CLOSE_WAIT};
    EXPECT_EQ(outcome.receiver_states, expected);
    EXPECT_EQ(outcome.receiver_sockets.open, 2u);  // the listener and the one in CLOSE_WAIT
    // Only a SimTcpSocket tells its state.
    EXPECT_EQ(outcome.receiver_sockets.close_wait, kind == Sockets::kNs3Close ? 1u : 0u);
    EXPECT_EQ(outcome.sender_sockets.open, 0u);
  }
}

// The accepted socket's states from its acceptance (in ESTABLISHED) on, with kRfc793: CLOSE_WAIT
// is ns-3's step, which the socket undoes within the same segment.
const std::vector<TcpSocket::TcpStates_t> kRfc793States = {
    TcpSocket::FIN_WAIT_1, TcpSocket::CLOSE_WAIT, TcpSocket::CLOSING, TcpSocket::TIME_WAIT,
    TcpSocket::CLOSED};

TEST(SimTcpSocket, Rfc793CloseClosesWhenTheFinOvertakesALostSegment) {
  const Outcome outcome = close_after(3, Sockets::kRfc793Close);
  EXPECT_EQ(outcome.received, kMessageBytes);
  EXPECT_EQ(outcome.receiver_states, kRfc793States);
  EXPECT_EQ(outcome.receiver_sockets.open, 1u);  // the listener only
  EXPECT_EQ(outcome.receiver_sockets.close_wait, 0u);
  EXPECT_EQ(outcome.sender_sockets.open, 0u);
}

TEST(SimTcpSocket, Rfc793CloseResendsItsFinWhenItIsLost) {
  // As above, and the receiver's FIN is lost: it is re-sent on the timer either way, which closes
  // the sender, but only kRfc793 closes the receiver.
  const Outcome ns3_close = close_after(3, Sockets::kNs3Close, /*drop_fin=*/true);
  EXPECT_EQ(ns3_close.receiver_sockets.close_wait, 1u);
  EXPECT_EQ(ns3_close.sender_sockets.open, 0u);
  const Outcome outcome = close_after(3, Sockets::kRfc793Close, /*drop_fin=*/true);
  EXPECT_EQ(outcome.received, kMessageBytes);
  EXPECT_EQ(outcome.receiver_states, kRfc793States);
  EXPECT_EQ(outcome.receiver_sockets.open, 1u);
  EXPECT_EQ(outcome.sender_sockets.open, 0u);
}

TEST(SimTcpSocket, EveryKindClosesWithoutLoss) {
  for (Sockets kind : {Sockets::kNs3Factory, Sockets::kNs3Close, Sockets::kRfc793Close}) {
    const Outcome outcome = close_after(0, kind);
    const int k = static_cast<int>(kind);
    EXPECT_EQ(outcome.received, kMessageBytes) << "kind " << k;
    EXPECT_EQ(outcome.receiver_sockets.open, 1u) << "kind " << k;
    EXPECT_EQ(outcome.sender_sockets.open, 0u) << "kind " << k;
    ASSERT_FALSE(outcome.receiver_states.empty());
    EXPECT_EQ(outcome.receiver_states.back(), TcpSocket::CLOSED) << "kind " << k;
  }
}

}  // namespace
}  // namespace dlcp::sim
