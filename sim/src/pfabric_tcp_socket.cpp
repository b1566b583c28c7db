#include "pfabric_tcp_socket.hpp"

#include "ns3/simulator.h"
#include "ns3/tcp-header.h"

namespace dlcp::sim {

NS_OBJECT_ENSURE_REGISTERED(PfabricTcpSocket);

ns3::TypeId PfabricTcpSocket::GetTypeId() {
  static ns3::TypeId tid = ns3::TypeId("dlcp::sim::PfabricTcpSocket")
                               .SetParent<SimTcpSocket>()
                               .SetGroupName("Internet")
                               .AddConstructor<PfabricTcpSocket>();
  return tid;
}

ns3::Ptr<ns3::TcpSocketBase> PfabricTcpSocket::Fork() {
  return ns3::CopyObject<PfabricTcpSocket>(this);
}

void PfabricTcpSocket::ReTxTimeout() {
  // The base doubles m_rto before it re-sends the data; the timeout that just expired is the one
  // to keep.
  const ns3::Time expired = m_rto.Get();
  SimTcpSocket::ReTxTimeout();
  if (m_rto.Get() <= expired) return;
  m_rto = expired;
  if (m_retxEvent.IsRunning()) {
    m_retxEvent.Cancel();
    m_retxEvent = ns3::Simulator::Schedule(expired, &PfabricTcpSocket::ReTxTimeout, this);
  }
}

bool PfabricTcpSocket::probing() const {
  // The base counts m_dataRetrCount down from m_dataRetries on every timeout (before it re-sends)
  // and sets it back on every new ACK: the difference is the run of consecutive timeouts.
  return probe_after_timeouts_ > 0 && m_dataRetrCount <= m_dataRetries &&
         m_dataRetries - m_dataRetrCount >= probe_after_timeouts_;
}

std::uint32_t PfabricTcpSocket::SendDataPacket(ns3::SequenceNumber32 seq, std::uint32_t max_size,
                                               bool with_ack) {
  return SimTcpSocket::SendDataPacket(seq, probing() ? 1 : max_size, with_ack);
}

std::uint32_t PfabricTcpSocket::AvailableWindow() const {
  // The base fills the window segment by segment; with one-byte segments a window of a segment
  // would go out as a burst of them.
  if (probing() && BytesInFlight() > 0) return 0;
  return SimTcpSocket::AvailableWindow();
}

void PfabricTcpSocket::SendEmptyPacket(std::uint8_t flags) {
  // A SYN (or SYN-ACK) goes out with m_rto = ConnTimeout x 2^(SYNs sent before), and the base
  // schedules this same call again at that time. Holding the count of SYNs at one already sent
  // keeps that shift in range however many are lost (the base's `int` shift overflows at 32),
  // and a pFabric flow never gives up.
  const bool syn = (flags & ns3::TcpHeader::SYN) != 0;
  if (syn && m_synCount + 1 < m_synRetries) m_synCount = m_synRetries - 1;
  SimTcpSocket::SendEmptyPacket(flags);
  if (!syn || m_rto.Get() <= m_cnTimeout) return;
  m_rto = m_cnTimeout;
  if (m_retxEvent.IsRunning()) {
    m_retxEvent.Cancel();
    m_retxEvent =
        ns3::Simulator::Schedule(m_cnTimeout, &PfabricTcpSocket::SendEmptyPacket, this, flags);
  }
}

}  // namespace dlcp::sim
