// Every TCP socket of the simulation: ns-3's TcpSocketBase, and optionally (kRfc793) its close
// after an early FIN as RFC 793 has it.
// In ns-3.37, when the segment that fills the last hole before a FIN that came early arrives, the
// socket hands the data to the application and then moves to CLOSE_WAIT, whatever state the
// application's Close() has put it in meanwhile. A receiver that closes once it has its whole
// message (ours do) has already sent its FIN from FIN_WAIT_1: RFC 793 has it go to CLOSING and
// then TIME_WAIT, but ns-3's socket waits in CLOSE_WAIT for a Close() that already came and keeps
// its endpoint for the rest of the run (its peer still closes). Every packet a host receives is
// looked up in a linear list of its endpoints, so under pFabric's and PIAS's losses those left in
// CLOSE_WAIT piled up (1,900 in pFabric's ring run at 48 hosts after 100 ms) and slowed it down.
// A socket may also keep two window rules of Linux's that ns-3's lacks (set_linux_window_rules),
// which a connection kept between messages needs:
//  - it restarts its window after an idle spell (net.ipv4.tcp_slow_start_after_idle, on by
//    default), or it would resume a whole iteration later with the window it had grown;
//  - its window lets one segment out whenever nothing is in flight. ns-3's DCTCP can cut the
//    window below one segment (to (1 - alpha/2) x cwnd, unfloored), and the base then waits for a
//    larger one (silly-window avoidance) that only a retransmission timeout brings, and none at
//    all once every byte written was acknowledged: a kept connection would then hold its next
//    message for good. Linux counts its window in packets, never below one.
// Off by default: every stored result with a connection per message was made without them.
// Every SimTcpSocket also works around an off-by-one in ns-3.37's TcpTxBuffer::NextSeg: once the
// bytes sent equal the receiver's window it offers an empty segment of new data (`sent <= rwnd`
// where `<` was meant), which TcpSocketBase sends, dereferencing the null item its buffer returns.
// That needs some of the window SACKed or lost (the window in flight below the receiver's) and a
// receiver's window small enough to be filled, such as an unscaled 64 KB: no stored run met it,
// but a kept pFabric connection at 144 hosts did, with 65,535 bytes sent and a window of 65,535.
// The window then reads as full, as it is.
#pragma once

#include <cstdint>

#include "config.hpp"
#include "ns3/node-container.h"
#include "ns3/node.h"
#include "ns3/socket.h"
#include "ns3/tcp-socket-base.h"

namespace dlcp::sim {

class SimTcpSocket : public ns3::TcpSocketBase {
 public:
  static ns3::TypeId GetTypeId();

  SimTcpSocket() = default;
  SimTcpSocket(const SimTcpSocket& other) = default;

  void set_early_fin_close(EarlyFinClose close) { early_fin_close_ = close; }
  void set_linux_window_rules(bool on) { linux_window_rules_ = on; }
  TcpStates_t state() const { return m_state.Get(); }
  std::uint32_t congestion_window_bytes() const { return m_tcb->m_cWnd.Get(); }

  int Close() override;

 protected:
  ns3::Ptr<ns3::TcpSocketBase> Fork() override;  // accepted connections are SimTcpSockets too
  // With kRfc793, puts the socket where RFC 793 has it when the base moved it to CLOSE_WAIT
  // after its own FIN.
  void ReceivedData(ns3::Ptr<ns3::Packet> packet, const ns3::TcpHeader& header) override;
  // With Linux's window rules, new data that leaves with nothing unacknowledged, more than an
  // RTO after the last data left, first shrinks the window (restart_window), and a window below
  // one segment lets one out when nothing is in flight.
  std::uint32_t SendDataPacket(ns3::SequenceNumber32 seq, std::uint32_t max_size,
                               bool with_ack) override;
  std::uint32_t AvailableWindow() const override;

 private:
  // Whether the base would next send a segment of no bytes (the NextSeg off-by-one above).
  bool next_segment_is_empty() const;

  EarlyFinClose early_fin_close_ = EarlyFinClose::kNs3;
  bool linux_window_rules_ = false;
  ns3::Time last_data_sent_ = ns3::Time::Min();  // Min(): nothing sent yet
  // The state before the base's peer-close step could run: at the start of ReceivedData, or after
  // a Close() the application made while ReceivedData handed it data.
  TcpStates_t state_before_peer_close_ = CLOSED;
};

// The congestion window (bytes) a connection resumes with after sending nothing for `idle`,
// longer than `rto`, as Linux's tcp_cwnd_restart has it: halved for every further RTO of the
// idle spell, but never below the restart window, the smaller of the initial window and `cwnd`.
std::uint32_t restart_window(std::uint32_t cwnd, std::uint32_t initial_window, ns3::Time idle,
                             ns3::Time rto);

// ns-3's RTO is max(MinRto, srtt + max(ClockGranularity, 4 x rttvar)). The granularity that gives
// `floor`'s rule for a minimum RTO of `min_rto`: 1 us for RFC 6298's (ns-3's default of 1 ms would
// floor every RTO at 1 ms), `min_rto` itself for Linux's srtt + max(min_rto, 4 x rttvar).
ns3::Time rto_clock_granularity(RtoFloor floor, ns3::Time min_rto);

// A TCP socket on `node` of the congestion control, recovery and RTT estimator the node's
// TcpL4Protocol is configured with (as TcpSocketFactory makes them): a SimTcpSocket for kBackoff,
// a PfabricTcpSocket otherwise. Its forks (accepted connections) keep `timer` and `close`.
ns3::Ptr<ns3::Socket> create_tcp_socket(ns3::Ptr<ns3::Node> node, RetransmitTimer timer,
                                        EarlyFinClose close);

struct TcpSocketCount {
  std::uint64_t open = 0;  // listeners included
  std::uint64_t close_wait = 0;
};
// The TCP sockets open on `nodes`, and how many of them are in CLOSE_WAIT (of SimTcpSockets,
// which every socket the simulation makes is).
TcpSocketCount count_tcp_sockets(const ns3::NodeContainer& nodes);

}  // namespace dlcp::sim
