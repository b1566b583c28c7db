#include "tcp_socket.hpp"

#include <algorithm>

#include "ns3/object-factory.h"
#include "ns3/object-vector.h"
#include "ns3/rtt-estimator.h"
#include "ns3/simulator.h"
#include "ns3/tcp-congestion-ops.h"
#include "ns3/tcp-header.h"
#include "ns3/tcp-l4-protocol.h"
#include "ns3/tcp-recovery-ops.h"
#include "ns3/tcp-tx-buffer.h"
#include "pfabric_tcp_socket.hpp"

namespace dlcp::sim {

NS_OBJECT_ENSURE_REGISTERED(SimTcpSocket);

ns3::TypeId SimTcpSocket::GetTypeId() {
  static ns3::TypeId tid = ns3::TypeId("dlcp::sim::SimTcpSocket")
                               .SetParent<ns3::TcpSocketBase>()
                               .SetGroupName("Internet")
                               .AddConstructor<SimTcpSocket>();
  return tid;
}

ns3::Ptr<ns3::TcpSocketBase> SimTcpSocket::Fork() {
  return ns3::CopyObject<SimTcpSocket>(this);
}

int SimTcpSocket::Close() {
  const int result = TcpSocketBase::Close();
  state_before_peer_close_ = m_state;
  return result;
}

void SimTcpSocket::ReceivedData(ns3::Ptr<ns3::Packet> packet, const ns3::TcpHeader& header) {
  state_before_peer_close_ = m_state;
  TcpSocketBase::ReceivedData(packet, header);
  if (early_fin_close_ != EarlyFinClose::kRfc793 || m_state != CLOSE_WAIT) return;
  // The base has acknowledged the peer's FIN (as RFC 793 does too); only the state is wrong.
  if (state_before_peer_close_ == FIN_WAIT_1) {
    m_state = CLOSING;
    // What ProcessWait checks: whether this segment acknowledged our FIN as well.
    if (m_txBuffer->Size() == 0 &&
        header.GetAckNumber() == m_tcb->m_highTxMark + ns3::SequenceNumber32(1)) {
      TimeWait();
    }
  } else if (state_before_peer_close_ == FIN_WAIT_2) {
    TimeWait();
  }
}

std::uint32_t SimTcpSocket::SendDataPacket(ns3::SequenceNumber32 seq, std::uint32_t max_size,
                                           bool with_ack) {
  const ns3::Time now = ns3::Simulator::Now();
  const bool new_data = seq >= m_tcb->m_highTxMark.Get();
  if (linux_window_rules_ && new_data && last_data_sent_ != ns3::Time::Min() &&
      UnAckDataCount() == 0 && now - last_data_sent_ > m_rto.Get()) {
    const std::uint32_t cwnd = m_tcb->m_cWnd.Get();
    // Linux keeps what the old window knew as the slow-start threshold (tcp_current_ssthresh).
    m_tcb->m_ssThresh = std::max(m_tcb->m_ssThresh.Get(), cwnd / 2 + cwnd / 4);
    const std::uint32_t restarted = restart_window(
        cwnd, m_tcb->m_initialCWnd * m_tcb->m_segmentSize, now - last_data_sent_, m_rto.Get());
    m_tcb->m_cWnd = restarted;
    m_tcb->m_cWndInfl = restarted;
  }
  const std::uint32_t size = TcpSocketBase::SendDataPacket(seq, max_size, with_ack);
  if (new_data) last_data_sent_ = now;
  return size;
}

std::uint32_t SimTcpSocket::AvailableWindow() const {
  std::uint32_t available = TcpSocketBase::AvailableWindow();
  const std::uint32_t segment = m_tcb->m_segmentSize;
  if (linux_window_rules_ && available < segment && BytesInFlight() == 0 &&
      m_rWnd.Get() >= segment) {
    available = segment;
  }
  if (available > 0 && UnAckDataCount() >= m_rWnd.Get() && next_segment_is_empty()) return 0;
  return available;
}

bool SimTcpSocket::next_segment_is_empty() const {
  ns3::SequenceNumber32 next;
  ns3::SequenceNumber32 high;
  const bool recovery = m_sackEnabled && m_tcb->m_congState == ns3::TcpSocketState::CA_RECOVERY;
  return m_txBuffer->NextSeg(&next, &high, recovery) && high == next;
}

ns3::Time rto_clock_granularity(RtoFloor floor, ns3::Time min_rto) {
  return floor == RtoFloor::kLinux ? min_rto : ns3::MicroSeconds(1);
}

std::uint32_t restart_window(std::uint32_t cwnd, std::uint32_t initial_window, ns3::Time idle,
                             ns3::Time rto) {
  const std::uint32_t restart = std::min(initial_window, cwnd);
  if (rto <= ns3::Time(0)) return restart;  // a zero RTO would never stop halving
  for (ns3::Time left = idle - rto; left > ns3::Time(0) && cwnd > restart; left -= rto) {
    cwnd >>= 1;
  }
  return std::max(cwnd, restart);
}

ns3::Ptr<ns3::Socket> create_tcp_socket(ns3::Ptr<ns3::Node> node, RetransmitTimer timer,
                                        EarlyFinClose close) {
  // What TcpL4Protocol::CreateSocket does, with our socket classes.
  auto tcp = node->GetObject<ns3::TcpL4Protocol>();
  ns3::TypeIdValue congestion;
  ns3::TypeIdValue recovery;
  ns3::TypeIdValue rtt;
  tcp->GetAttribute("SocketType", congestion);
  tcp->GetAttribute("RecoveryType", recovery);
  tcp->GetAttribute("RttEstimatorType", rtt);
  ns3::Ptr<SimTcpSocket> socket;
  if (timer == RetransmitTimer::kBackoff) {
    socket = ns3::CreateObject<SimTcpSocket>();
  } else {
    auto pfabric = ns3::CreateObject<PfabricTcpSocket>();
    pfabric->set_probe_after_timeouts(timer == RetransmitTimer::kProbe ? kProbeAfterTimeouts : 0);
    socket = pfabric;
  }
  socket->set_early_fin_close(close);
  ns3::ObjectFactory factory;
  factory.SetTypeId(rtt.Get());
  socket->SetRtt(factory.Create<ns3::RttEstimator>());
  factory.SetTypeId(congestion.Get());
  socket->SetCongestionControlAlgorithm(factory.Create<ns3::TcpCongestionOps>());
  factory.SetTypeId(recovery.Get());
  socket->SetRecoveryAlgorithm(factory.Create<ns3::TcpRecoveryOps>());
  socket->SetNode(node);
  socket->SetTcp(tcp);
  tcp->AddSocket(socket);
  return socket;
}

TcpSocketCount count_tcp_sockets(const ns3::NodeContainer& nodes) {
  TcpSocketCount count;
  for (std::uint32_t n = 0; n < nodes.GetN(); ++n) {
    ns3::ObjectVectorValue sockets;
    nodes.Get(n)->GetObject<ns3::TcpL4Protocol>()->GetAttribute("SocketList", sockets);
    count.open += sockets.GetN();
    for (std::size_t i = 0; i < sockets.GetN(); ++i) {
      const auto socket = ns3::DynamicCast<SimTcpSocket>(sockets.Get(i));
      if (socket && socket->state() == ns3::TcpSocket::CLOSE_WAIT) ++count.close_wait;
    }
  }
  return count;
}

}  // namespace dlcp::sim
