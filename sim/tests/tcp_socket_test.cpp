// A connection's close when the sender's FIN overtakes a lost data segment, on a two-host link:
// ns-3's own socket, and the SimTcpSocket with EarlyFinClose::kNs3, leave the receiver in
// CLOSE_WAIT for good; with kRfc793 it closes. Then the window's restart after idle: its
// arithmetic on fixed inputs, and a kept connection that sends, idles and sends again; and a
// DCTCP connection that sends again after marks cut its window below one segment. And the RTO
// floor's rules: RFC 6298's floors the whole timeout, Linux's keeps it the floor above the round
// trip.
#include <gtest/gtest.h>

#include <functional>
#include <vector>

#include "ns3/boolean.h"
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
#include "ns3/tcp-socket-state.h"
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

TEST(RestartWindow, HalvesOncePerFurtherRtoDownToTheInitialWindow) {
  const ns3::Time rto = MicroSeconds(200);
  // Just over one RTO: the first RTO of the spell costs nothing, the half RTO beyond it one
  // halving.
  EXPECT_EQ(restart_window(100000, 10000, MicroSeconds(300), rto), 50000u);
  // 2.5 RTOs: two halvings.
  EXPECT_EQ(restart_window(100000, 10000, MicroSeconds(500), rto), 25000u);
  // Ten RTOs would halve seven times, but the window stops at the initial one.
  EXPECT_EQ(restart_window(100000, 10000, MicroSeconds(2000), rto), 10000u);
  // The halving that crosses the initial window is undone: 12,500 -> 6,250 -> 10,000.
  EXPECT_EQ(restart_window(12500, 10000, MicroSeconds(2000), rto), 10000u);
  // A window already below the initial one is kept.
  EXPECT_EQ(restart_window(5000, 10000, MicroSeconds(2000), rto), 5000u);
  // A whole number of RTOs: the last one leaves nothing beyond it, so no halving for it.
  EXPECT_EQ(restart_window(100000, 10000, MicroSeconds(400), rto), 50000u);
  // A zero RTO restarts at once rather than halving forever.
  EXPECT_EQ(restart_window(100000, 10000, MicroSeconds(300), ns3::Time(0)), 10000u);
}

// Host 0 of a two-host link with a socket bound to send to host 1, which listens and hands every
// connection it accepts to `on_accept`. Both ends are SimTcpSockets with the experiment's settings
// that matter here (an ACK per segment, a 200 us minimum RTO on a 1 us clock), segments of
// kSegmentBytes, and whatever `configure` adds.
struct SocketPair {
  ns3::Ptr<ns3::Socket> listener;
  ns3::Ptr<ns3::Socket> sender;
  ns3::Ipv4Address server;
};

SocketPair open_socket_pair(
    const TwoHostLink& link,
    ns3::Callback<void, ns3::Ptr<ns3::Socket>, const ns3::Address&> on_accept,
    const std::function<void(ns3::Socket&)>& configure = {}) {
  auto make = [&configure](ns3::Ptr<ns3::Node> node) {
    auto socket = create_tcp_socket(node, RetransmitTimer::kBackoff, EarlyFinClose::kNs3);
    socket->SetAttribute("SegmentSize", ns3::UintegerValue(kSegmentBytes));
    socket->SetAttribute("DelAckCount", ns3::UintegerValue(1));
    socket->SetAttribute("MinRto", ns3::TimeValue(MicroSeconds(200)));
    socket->SetAttribute("ClockGranularity", ns3::TimeValue(MicroSeconds(1)));
    if (configure) configure(*socket);
    return socket;
  };
  SocketPair pair{make(link.nodes.Get(1)), make(link.nodes.Get(0)), link.interfaces.GetAddress(1)};
  pair.listener->Bind(ns3::InetSocketAddress(ns3::Ipv4Address::GetAny(), kPort));
  pair.listener->Listen();
  pair.listener->SetAcceptCallback(
      ns3::MakeNullCallback<bool, ns3::Ptr<ns3::Socket>, const ns3::Address&>(), on_accept);
  pair.sender->Bind();
  return pair;
}

// Connects the pair's sender and writes `bytes`, now.
void connect_and_send(const SocketPair& pair, std::uint32_t bytes) {
  ns3::Simulator::ScheduleNow([sender = pair.sender, server = pair.server, bytes] {
    sender->Connect(ns3::InetSocketAddress(server, kPort));
    sender->Send(ns3::Create<ns3::Packet>(bytes));
  });
}

constexpr std::uint32_t kIdleMessageBytes = 60 * kSegmentBytes;

struct IdleRun {
  ns3::Ptr<SimTcpSocket> sender;
  ns3::Time idle;
  std::uint32_t received = 0;
  std::uint32_t window_before_idle = 0;  // as the second message is written
  std::uint32_t window_after_idle = 0;   // just after the second message's first segment left
};

void send_again(IdleRun* run) {
  run->window_before_idle = run->sender->congestion_window_bytes();
  run->sender->Send(ns3::Create<ns3::Packet>(kIdleMessageBytes), 0);
  ns3::Simulator::Schedule(
      MicroSeconds(1), [run] { run->window_after_idle = run->sender->congestion_window_bytes(); });
}

// Once the first message is in, the sender idles for `idle` (from about half a round trip after
// its last segment left) and sends the second.
void read_messages(IdleRun* run, ns3::Ptr<ns3::Socket> socket) {
  const std::uint32_t before = run->received;
  while (auto packet = socket->Recv()) run->received += packet->GetSize();
  if (before < kIdleMessageBytes && run->received >= kIdleMessageBytes) {
    ns3::Simulator::Schedule(run->idle, &send_again, run);
  }
}

void read_on_accept(IdleRun* run, ns3::Ptr<ns3::Socket> socket, const ns3::Address&) {
  socket->SetRecvCallback(ns3::MakeBoundCallback(&read_messages, run));
}

// One kept connection sends a message of 60 segments, idles for `idle`, then sends another.
IdleRun send_idle_send(bool linux_rules, ns3::Time idle) {
  const TwoHostLink link = make_two_host_link(nullptr, nullptr);
  IdleRun run;
  run.idle = idle;
  const SocketPair pair = open_socket_pair(
      link, ns3::MakeBoundCallback(&read_on_accept, &run),
      [](ns3::Socket& s) { s.SetAttribute("InitialCwnd", ns3::UintegerValue(4)); });
  run.sender = ns3::DynamicCast<SimTcpSocket>(pair.sender);
  run.sender->set_linux_window_rules(linux_rules);
  connect_and_send(pair, kIdleMessageBytes);
  ns3::Simulator::Stop(ns3::MilliSeconds(10));
  ns3::Simulator::Run();
  ns3::Simulator::Destroy();
  run.sender = nullptr;
  return run;
}

TEST(SimTcpSocket, LinuxWindowRulesRestartTheWindowAfterIdle) {
  // 2 ms idle is 10 RTOs at the 200 us floor: back to the initial 4 segments.
  const IdleRun restarted = send_idle_send(true, ns3::MilliSeconds(2));
  EXPECT_EQ(restarted.received, 2 * kIdleMessageBytes);
  EXPECT_GT(restarted.window_before_idle, 16 * kSegmentBytes);  // grown in slow start
  EXPECT_EQ(restarted.window_after_idle, 4 * kSegmentBytes);
  // ns-3's own behaviour: the grown window is kept across the idle spell.
  const IdleRun kept = send_idle_send(false, ns3::MilliSeconds(2));
  EXPECT_EQ(kept.received, 2 * kIdleMessageBytes);
  EXPECT_EQ(kept.window_after_idle, kept.window_before_idle);
  // A pause shorter than the RTO is not idleness.
  const IdleRun brief = send_idle_send(true, MicroSeconds(100));
  EXPECT_EQ(brief.received, 2 * kIdleMessageBytes);
  EXPECT_EQ(brief.window_after_idle, brief.window_before_idle);
}

void count_received(std::uint32_t* received, ns3::Ptr<ns3::Socket> socket) {
  while (auto packet = socket->Recv()) *received += packet->GetSize();
}

void read_all(std::uint32_t* received, ns3::Ptr<ns3::Socket> socket, const ns3::Address&) {
  socket->SetRecvCallback(ns3::MakeBoundCallback(&count_received, received));
}

// Sets a socket's congestion window, as DCTCP's cut (1 - alpha/2) x cwnd, or its recovery's exit to
// that threshold, can leave it: ns-3 floors neither at one segment.
struct WindowCut : SimTcpSocket {
  static void set(SimTcpSocket& socket, std::uint32_t bytes) {
    ns3::Ptr<ns3::TcpSocketState>& state = socket.*(&WindowCut::m_tcb);
    state->m_cWnd = bytes;
    state->m_cWndInfl = bytes;
  }
};

// Bytes received of two messages of 10 segments, the second written once the first is
// acknowledged and the sender's window is cut to 3/4 of a segment.
std::uint32_t send_after_window_cut(bool linux_rules) {
  static constexpr std::uint32_t kMessage = 10 * kSegmentBytes;
  const TwoHostLink link = make_two_host_link(nullptr, nullptr);
  std::uint32_t received = 0;
  const SocketPair pair = open_socket_pair(link, ns3::MakeBoundCallback(&read_all, &received));
  auto sender = ns3::DynamicCast<SimTcpSocket>(pair.sender);
  sender->set_linux_window_rules(linux_rules);
  connect_and_send(pair, kMessage);
  ns3::Simulator::Schedule(ns3::MilliSeconds(5), [&] {
    EXPECT_EQ(received, kMessage);
    WindowCut::set(*sender, kSegmentBytes * 3 / 4);
    sender->Send(ns3::Create<ns3::Packet>(kMessage), 0);
  });
  ns3::Simulator::Stop(ns3::MilliSeconds(50));
  ns3::Simulator::Run();
  ns3::Simulator::Destroy();
  return received;
}

TEST(SimTcpSocket, LinuxWindowRulesSendWithAWindowBelowOneSegment) {
  // Once the first message is acknowledged nothing is in flight and no timer runs. ns-3's socket
  // then holds the second for good, waiting for a larger window that no ACK will bring; with
  // Linux's rules it goes out, a segment at a time until ACKs grow the window again.
  EXPECT_EQ(send_after_window_cut(true), 20 * kSegmentBytes);
  EXPECT_EQ(send_after_window_cut(false), 10 * kSegmentBytes);
}

TEST(SimTcpSocket, FillsTheReceiversWindowExactlyWithoutSendingAnEmptySegment) {
  // A receiver without window scaling offers 65,535 bytes; an initial window of 100 segments
  // fills it exactly (the last segment short), and the 2nd segment is lost, so the SACKs of the
  // others open the window in flight while the receiver's stays full. ns-3.37's buffer then
  // offers an empty segment of new data, and its socket crashes sending it.
  static constexpr std::uint32_t kMessage = 100 * kSegmentBytes;
  auto loss = ns3::CreateObject<DropNthSegment>();
  loss->nth = 2;
  const TwoHostLink link = make_two_host_link(nullptr, loss);
  std::uint32_t received = 0;
  const SocketPair pair =
      open_socket_pair(link, ns3::MakeBoundCallback(&read_all, &received), [](ns3::Socket& s) {
        s.SetAttribute("InitialCwnd", ns3::UintegerValue(100));
        s.SetAttribute("WindowScaling", ns3::BooleanValue(false));
      });
  connect_and_send(pair, kMessage);
  ns3::Simulator::Stop(ns3::MilliSeconds(50));
  ns3::Simulator::Run();
  ns3::Simulator::Destroy();
  EXPECT_EQ(received, kMessage);
}

TEST(RtoFloor, GranularityIsTheFloorForLinuxAndAMicrosecondForRfc6298) {
  EXPECT_EQ(rto_clock_granularity(RtoFloor::kLinux, MicroSeconds(200)), MicroSeconds(200));
  EXPECT_EQ(rto_clock_granularity(RtoFloor::kRfc6298, MicroSeconds(200)), MicroSeconds(1));
}

// The sender's RTO after a 40-segment message on the two-host link with a 200 us minimum RTO
// under `floor`'s rule, and its last round-trip sample then.
std::pair<ns3::Time, ns3::Time> rto_after_a_message(RtoFloor floor) {
  const TwoHostLink link = make_two_host_link(nullptr, nullptr);
  auto make = [floor](ns3::Ptr<ns3::Node> node) {
    ns3::Ptr<ns3::Socket> socket =
        create_tcp_socket(node, RetransmitTimer::kBackoff, EarlyFinClose::kNs3);
    socket->SetAttribute("SegmentSize", ns3::UintegerValue(kSegmentBytes));
    socket->SetAttribute("MinRto", ns3::TimeValue(MicroSeconds(200)));
    socket->SetAttribute("ClockGranularity",
                         ns3::TimeValue(rto_clock_granularity(floor, MicroSeconds(200))));
    return socket;
  };
  auto listener = make(link.nodes.Get(1));
  listener->Bind(ns3::InetSocketAddress(ns3::Ipv4Address::GetAny(), kPort));
  listener->Listen();
  auto sender = make(link.nodes.Get(0));
  ns3::Time rto;
  ns3::Time srtt;
  sender->TraceConnectWithoutContext(
      "RTO", ns3::MakeBoundCallback(
                 +[](ns3::Time* last, ns3::Time, ns3::Time now) { *last = now; }, &rto));
  sender->TraceConnectWithoutContext(
      "RTT", ns3::MakeBoundCallback(
                 +[](ns3::Time* last, ns3::Time, ns3::Time now) { *last = now; }, &srtt));
  sender->Bind();
  const ns3::InetSocketAddress server(link.interfaces.GetAddress(1), kPort);
  ns3::Simulator::ScheduleNow([sender, server] {
    sender->Connect(server);
    sender->Send(ns3::Create<ns3::Packet>(40 * kSegmentBytes));
  });
  ns3::Simulator::Stop(ns3::MilliSeconds(20));
  ns3::Simulator::Run();
  ns3::Simulator::Destroy();
  return {rto, srtt};
}

TEST(RtoFloor, Rfc6298FloorsTheWholeTimeoutAndLinuxAddsItToTheRoundTrip) {
  // ns-3's timestamps count milliseconds, so it measures this 20 us round trip as 1 us; the
  // variation of equal samples stays far below the floor.
  const auto [rfc_rto, rfc_rtt] = rto_after_a_message(RtoFloor::kRfc6298);
  EXPECT_EQ(rfc_rtt, MicroSeconds(1));
  EXPECT_EQ(rfc_rto, MicroSeconds(200));  // max(floor, srtt + 4 x rttvar)
  const auto [linux_rto, linux_rtt] = rto_after_a_message(RtoFloor::kLinux);
  EXPECT_EQ(linux_rtt, MicroSeconds(1));
  EXPECT_EQ(linux_rto, MicroSeconds(200) + linux_rtt);  // srtt + max(floor, 4 x rttvar)
}

}  // namespace
}  // namespace dlcp::sim
