// A TCP socket whose retransmission timer never backs off, for the pFabric-like baseline.
// pFabric's rate control retransmits after a small fixed timeout, again and again; ns-3's TCP
// doubles the timeout on every consecutive timeout of data, and of a SYN (ConnTimeout x 2^k), as
// RFC 6298 asks of Internet TCP. A pFabric SYN carries the priority of the whole message and is
// evicted often, so with backoff a large message can wait out 2^k timeouts before it starts.
// Between timeouts the RTO still follows the RTT estimate (floored at MinRto), as before.
#pragma once

#include <cstdint>

#include "ns3/node.h"
#include "ns3/socket.h"
#include "ns3/tcp-socket-base.h"

namespace dlcp::sim {

class FixedRtoTcpSocket : public ns3::TcpSocketBase {
 public:
  static ns3::TypeId GetTypeId();

  FixedRtoTcpSocket() = default;
  FixedRtoTcpSocket(const FixedRtoTcpSocket& other) = default;

 protected:
  ns3::Ptr<ns3::TcpSocketBase> Fork() override;  // accepted connections keep the fixed timer
  // Each undoes the doubling the base applied and re-arms the timer at the undoubled value.
  void ReTxTimeout() override;
  void SendEmptyPacket(std::uint8_t flags) override;
};

// A TCP socket on `node` of the congestion control, recovery and RTT estimator the node's
// TcpL4Protocol is configured with (as TcpSocketFactory makes them), with a timer that backs off
// (`fixed_rto` false: ns-3's TcpSocketBase) or does not (FixedRtoTcpSocket).
ns3::Ptr<ns3::Socket> create_tcp_socket(ns3::Ptr<ns3::Node> node, bool fixed_rto);

}  // namespace dlcp::sim
