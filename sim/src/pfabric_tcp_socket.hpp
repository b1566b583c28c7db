// The pFabric-like baseline's TCP socket: a retransmission timer that never backs off, and
// optionally pFabric's probe mode.
// pFabric's rate control retransmits after a small fixed timeout, again and again; ns-3's TCP
// doubles the timeout on every consecutive timeout of data, and of a SYN (ConnTimeout x 2^k), as
// RFC 6298 asks of Internet TCP. A pFabric SYN carries the priority of the whole message and is
// evicted often, so with backoff a large message can wait out 2^k timeouts before it starts.
// Between timeouts the RTO still follows the RTT estimate (floored at MinRto), as before.
// After several consecutive timeouts pFabric takes the flow to be starved by higher-priority
// ones and enters probe mode: it re-sends segments of one byte, not full ones, until one is
// acknowledged, so that a starved flow stops crowding the ports with full-size re-sends.
#pragma once

#include <cstdint>

#include "tcp_socket.hpp"

namespace dlcp::sim {

class PfabricTcpSocket : public SimTcpSocket {
 public:
  static ns3::TypeId GetTypeId();

  PfabricTcpSocket() = default;
  PfabricTcpSocket(const PfabricTcpSocket& other) = default;

  // 0: never probe.
  void set_probe_after_timeouts(std::uint32_t timeouts) { probe_after_timeouts_ = timeouts; }
  // Whether the run of consecutive timeouts has reached probe mode.
  bool probing() const;

 protected:
  ns3::Ptr<ns3::TcpSocketBase> Fork() override;  // accepted connections keep the timer
  // Each undoes the doubling the base applied and re-arms the timer at the undoubled value.
  void ReTxTimeout() override;
  void SendEmptyPacket(std::uint8_t flags) override;
  // In probe mode a segment carries one byte, and one is in flight at a time.
  std::uint32_t SendDataPacket(ns3::SequenceNumber32 seq, std::uint32_t max_size,
                               bool with_ack) override;
  std::uint32_t AvailableWindow() const override;

 private:
  std::uint32_t probe_after_timeouts_ = 0;
};

}  // namespace dlcp::sim
