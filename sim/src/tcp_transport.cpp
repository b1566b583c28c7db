#include "tcp_transport.hpp"

#include <algorithm>

#include "ns3/inet-socket-address.h"
#include "ns3/node.h"
#include "ns3/packet.h"
#include "ns3/simulator.h"
#include "ns3/tcp-header.h"
#include "ns3/tcp-socket-base.h"
#include "pfabric_tcp_socket.hpp"
#include "tcp_socket.hpp"

namespace dlcp::sim {

namespace {

constexpr std::uint16_t kTcpPort = 5000;
constexpr std::uint32_t kMaxWrite = 1u << 20;

// Level boundaries in bytes (remaining for pFabric, sent for PIAS): a flow at or below the first
// is level 0 (most urgent). Geometric steps of 4x from 16 KB cover both published flow-size
// distributions' ranges with 8 levels.
constexpr std::uint64_t kLevelBounds[] = {16000,   64000,    256000,  1000000,
                                          4000000, 16000000, 64000000};

int level_of(std::uint64_t bytes) {
  int level = 0;
  for (std::uint64_t bound : kLevelBounds) {
    if (bytes > bound) ++level;
  }
  return level;
}

void count_recovery(TcpLossCounters* counters, ns3::TcpSocketState::TcpCongState_t from,
                    ns3::TcpSocketState::TcpCongState_t to) {
  if (to == from) return;
  if (to == ns3::TcpSocketState::CA_LOSS) ++counters->timeouts;
  if (to == ns3::TcpSocketState::CA_RECOVERY) ++counters->fast_recoveries;
}

void count_send(TcpLossCounters* counters, ns3::Ptr<const ns3::Packet> packet,
                const ns3::TcpHeader& header, ns3::Ptr<const ns3::TcpSocketBase> socket) {
  const std::uint8_t flags = header.GetFlags();
  if ((flags & ns3::TcpHeader::SYN) != 0 && (flags & ns3::TcpHeader::ACK) == 0) {
    ++counters->syns_sent;
  }
  if (packet->GetSize() == 0) return;
  const auto pfabric = ns3::DynamicCast<const PfabricTcpSocket>(socket);
  if (pfabric && pfabric->probing()) ++counters->probes;
}

}  // namespace

struct TcpTransport::Flow {
  Message message;
  Delivered on_delivered;
  ns3::Time started;
  ns3::Ptr<ns3::Socket> tx;
  ns3::Ptr<ns3::Socket> rx;
  std::uint64_t written = 0;
  std::uint64_t sent = 0;
  std::uint64_t received = 0;
  int level = -1;
  bool finished = false;
};

TcpTransport::TcpTransport(const Topology& topology, const library::Policy& policy,
                           TcpPriority priority, RetransmitTimer timer, EarlyFinClose close,
                           FlowLog& log)
    : topology_(topology),
      policy_(policy),
      priority_(priority),
      timer_(timer),
      close_(close),
      log_(log) {
  for (std::uint32_t h = 0; h < topology.hosts.GetN(); ++h) {
    // Accepted connections are forks of the listener, so they keep its timer and close.
    auto listener = create_tcp_socket(topology.hosts.Get(h), timer, close);
    listener->Bind(ns3::InetSocketAddress(ns3::Ipv4Address::GetAny(), kTcpPort));
    listener->Listen();
    listener->SetAcceptCallback(
        ns3::MakeNullCallback<bool, ns3::Ptr<ns3::Socket>, const ns3::Address&>(),
        ns3::MakeCallback(&TcpTransport::on_accept, this));
    listeners_.push_back(listener);
  }
}

TcpTransport::~TcpTransport() = default;

std::uint8_t TcpTransport::tos_of_level(int level) const {
  // The DSCP of the policy's class `level`; TCP owns the ECN bits itself.
  return static_cast<std::uint8_t>(policy_.data_tos(level, /*is_protected=*/true) & 0xfc);
}

void TcpTransport::update_tos(Flow& flow) {
  if (priority_ == TcpPriority::kNone) return;
  const std::uint64_t bytes = flow.message.bytes;
  const std::uint64_t sent = std::min(flow.sent, bytes);
  const int level =
      priority_ == TcpPriority::kRemainingSize ? level_of(bytes - sent) : level_of(sent);
  if (level != flow.level) {
    flow.level = level;
    flow.tx->SetIpTos(tos_of_level(level));
  }
}

void TcpTransport::send(const Message& message, Delivered on_delivered) {
  auto flow = std::make_unique<Flow>();
  flow->message = message;
  flow->message.bytes = std::max<std::uint64_t>(1, message.bytes);
  flow->on_delivered = std::move(on_delivered);
  flow->started = ns3::Simulator::Now();
  auto node = topology_.hosts.Get(static_cast<std::uint32_t>(message.src));
  flow->tx = create_tcp_socket(node, timer_, close_);
  flow->tx->Bind();
  ns3::Address local;
  flow->tx->GetSockName(local);
  const auto port = ns3::InetSocketAddress::ConvertFrom(local).GetPort();
  by_source_[{topology_.host_address[message.src].Get(), port}] = flow.get();
  by_socket_[ns3::PeekPointer(flow->tx)] = flow.get();
  TcpLossCounters* losses =
      message.kind == FlowKind::kGradient ? &gradient_losses_ : &background_losses_;
  ++losses->connections;
  flow->tx->TraceConnectWithoutContext("CongState",
                                       ns3::MakeBoundCallback(&count_recovery, losses));
  flow->tx->TraceConnectWithoutContext("Tx", ns3::MakeBoundCallback(&count_send, losses));
  update_tos(*flow);
  flow->tx->SetConnectCallback(ns3::MakeCallback(&TcpTransport::on_connected, this),
                               ns3::MakeCallback(&TcpTransport::on_connect_failed, this));
  flow->tx->SetSendCallback(ns3::MakeCallback(&TcpTransport::on_writable, this));
  flow->tx->SetDataSentCallback(ns3::MakeCallback(&TcpTransport::on_data_sent, this));
  flow->tx->Connect(ns3::InetSocketAddress(topology_.host_address[message.dst], kTcpPort));
  log_.started(message.kind);
  Flow* key = flow.get();
  flows_.emplace(key, std::move(flow));
}

void TcpTransport::on_connected(ns3::Ptr<ns3::Socket> socket) {
  write_more(*by_socket_.at(ns3::PeekPointer(socket)));
}

void TcpTransport::on_connect_failed(ns3::Ptr<ns3::Socket>) {
  // Left unfinished on purpose: the flow's iteration then never completes, which the results
  // report, rather than the simulator quietly retrying with a fresh connection.
}

void TcpTransport::on_writable(ns3::Ptr<ns3::Socket> socket, std::uint32_t) {
  auto found = by_socket_.find(ns3::PeekPointer(socket));
  if (found != by_socket_.end()) write_more(*found->second);
}

void TcpTransport::on_data_sent(ns3::Ptr<ns3::Socket> socket, std::uint32_t bytes) {
  auto found = by_socket_.find(ns3::PeekPointer(socket));
  if (found == by_socket_.end()) return;
  found->second->sent += bytes;
  update_tos(*found->second);
}

void TcpTransport::write_more(Flow& flow) {
  while (flow.written < flow.message.bytes) {
    const std::uint32_t room = flow.tx->GetTxAvailable();
    if (room == 0) return;
    const auto chunk = static_cast<std::uint32_t>(
        std::min<std::uint64_t>({room, flow.message.bytes - flow.written, kMaxWrite}));
    const int accepted = flow.tx->Send(ns3::Create<ns3::Packet>(chunk));
    if (accepted <= 0) return;
    flow.written += static_cast<std::uint64_t>(accepted);
  }
  flow.tx->Close();  // FIN after the buffered data
}

void TcpTransport::on_accept(ns3::Ptr<ns3::Socket> socket, const ns3::Address& from) {
  const auto address = ns3::InetSocketAddress::ConvertFrom(from);
  auto found = by_source_.find({address.GetIpv4().Get(), address.GetPort()});
  if (found == by_source_.end()) return;
  Flow& flow = *found->second;
  by_source_.erase(found);
  flow.rx = socket;
  by_socket_[ns3::PeekPointer(socket)] = &flow;
  // ACKs of prioritised flows ride in the most urgent class, as pFabric and PIAS assume.
  if (priority_ != TcpPriority::kNone) socket->SetIpTos(tos_of_level(0));
  socket->SetRecvCallback(ns3::MakeCallback(&TcpTransport::on_readable, this));
}

void TcpTransport::on_readable(ns3::Ptr<ns3::Socket> socket) {
  auto found = by_socket_.find(ns3::PeekPointer(socket));
  if (found == by_socket_.end()) return;
  Flow& flow = *found->second;
  while (auto packet = socket->Recv()) flow.received += packet->GetSize();
  if (!flow.finished && flow.received >= flow.message.bytes) {
    flow.finished = true;
    log_.finished(flow.message, flow.started);
    socket->Close();
    by_socket_.erase(ns3::PeekPointer(flow.rx));
    by_socket_.erase(ns3::PeekPointer(flow.tx));
    // ns-3 holds each socket while it still has a connection to close. Keeping finished flows
    // (and so their sockets) grew a 144-host ring run to over 6 GiB.
    const Delivered on_delivered = std::move(flow.on_delivered);
    flows_.erase(&flow);
    if (on_delivered) on_delivered();
  }
}

}  // namespace dlcp::sim
