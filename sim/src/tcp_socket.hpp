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
  TcpStates_t state() const { return m_state.Get(); }

  int Close() override;

 protected:
  ns3::Ptr<ns3::TcpSocketBase> Fork() override;  // accepted connections are SimTcpSockets too
  // With kRfc793, puts the socket where RFC 793 has it when the base moved it to CLOSE_WAIT
  // after its own FIN.
  void ReceivedData(ns3::Ptr<ns3::Packet> packet, const ns3::TcpHeader& header) override;

 private:
  EarlyFinClose early_fin_close_ = EarlyFinClose::kNs3;
  // The state before the base's peer-close step could run: at the start of ReceivedData, or after
  // a Close() the application made while ReceivedData handed it data.
  TcpStates_t state_before_peer_close_ = CLOSED;
};

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
