#include "tcp_transport.hpp"

#include <algorithm>
#include <deque>

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

struct TcpTransport::Connection {
  // A message posted to the connection, and where its bytes end in the connection's stream once
  // it is written (0 while it waits).
  struct Posted {
    Message message;
    Delivered on_delivered;
    ns3::Time posted;
    std::uint64_t stream_end = 0;
  };

  ns3::Ptr<ns3::Socket> tx;
  ns3::Ptr<ns3::Socket> rx;
  bool established = false;
  // Not yet written, most urgent first: (priority class, post order).
  std::map<std::pair<int, std::uint64_t>, Posted> waiting;
  // Written, in stream order, until the receiver has them; the last is the current message.
  std::deque<Posted> in_stream;
  std::uint64_t written = 0;   // stream bytes handed to the socket
  std::uint64_t sent = 0;      // stream bytes sent at least once
  std::uint64_t received = 0;  // stream bytes the receiver has read
  int level = -1;
};

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
                           GradientConnections gradients, FlowLog& log)
    : topology_(topology),
      policy_(policy),
      priority_(priority),
      timer_(timer),
      close_(close),
      gradient_connections_(gradients),
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

int TcpTransport::level_of_message(std::uint64_t bytes, std::uint64_t sent) const {
  sent = std::min(sent, bytes);
  return priority_ == TcpPriority::kRemainingSize ? level_of(bytes - sent) : level_of(sent);
}

void TcpTransport::set_level(ns3::Socket& socket, int level, int* current) const {
  if (level == *current) return;
  *current = level;
  socket.SetIpTos(tos_of_level(level));
}

void TcpTransport::update_tos(Flow& flow) {
  if (priority_ == TcpPriority::kNone) return;
  set_level(*flow.tx, level_of_message(flow.message.bytes, flow.sent), &flow.level);
}

ns3::Ptr<ns3::Socket> TcpTransport::open_connection(
    int src, FlowKind kind, std::pair<std::uint32_t, std::uint16_t>* source) {
  auto socket =
      create_tcp_socket(topology_.hosts.Get(static_cast<std::uint32_t>(src)), timer_, close_);
  socket->Bind();
  ns3::Address local;
  socket->GetSockName(local);
  *source = {topology_.host_address[src].Get(),
             ns3::InetSocketAddress::ConvertFrom(local).GetPort()};
  TcpLossCounters* losses = &losses_of(kind);
  ++losses->connections;
  socket->TraceConnectWithoutContext("CongState", ns3::MakeBoundCallback(&count_recovery, losses));
  socket->TraceConnectWithoutContext("Tx", ns3::MakeBoundCallback(&count_send, losses));
  return socket;
}

void TcpTransport::send(const Message& message, Delivered on_delivered) {
  log_.started(message.kind);
  if (message.kind == FlowKind::kGradient &&
      gradient_connections_ == GradientConnections::kPersistent) {
    send_on_connection(message, std::move(on_delivered));
  } else {
    send_flow(message, std::move(on_delivered));
  }
}

void TcpTransport::send_flow(const Message& message, Delivered on_delivered) {
  auto flow = std::make_unique<Flow>();
  flow->message = message;
  flow->message.bytes = std::max<std::uint64_t>(1, message.bytes);
  flow->on_delivered = std::move(on_delivered);
  flow->started = ns3::Simulator::Now();
  std::pair<std::uint32_t, std::uint16_t> source;
  flow->tx = open_connection(message.src, message.kind, &source);
  by_source_[source] = flow.get();
  by_socket_[ns3::PeekPointer(flow->tx)] = flow.get();
  update_tos(*flow);
  flow->tx->SetConnectCallback(ns3::MakeCallback(&TcpTransport::on_connected, this),
                               ns3::MakeCallback(&TcpTransport::on_connect_failed, this));
  flow->tx->SetSendCallback(ns3::MakeCallback(&TcpTransport::on_writable, this));
  flow->tx->SetDataSentCallback(ns3::MakeCallback(&TcpTransport::on_data_sent, this));
  flow->tx->Connect(ns3::InetSocketAddress(topology_.host_address[message.dst], kTcpPort));
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
  const std::pair<std::uint32_t, std::uint16_t> source{address.GetIpv4().Get(), address.GetPort()};
  if (auto found = by_source_.find(source); found != by_source_.end()) {
    Flow& flow = *found->second;
    by_source_.erase(found);
    flow.rx = socket;
    by_socket_[ns3::PeekPointer(socket)] = &flow;
    socket->SetRecvCallback(ns3::MakeCallback(&TcpTransport::on_readable, this));
  } else if (auto kept = connection_by_source_.find(source); kept != connection_by_source_.end()) {
    Connection& connection = *kept->second;
    connection_by_source_.erase(kept);
    connection.rx = socket;
    connection_by_socket_[ns3::PeekPointer(socket)] = &connection;
    socket->SetRecvCallback(ns3::MakeCallback(&TcpTransport::on_connection_readable, this));
  } else {
    // A late duplicate SYN of a connection that has finished and closed: the listener forks a
    // socket no message owns, which answers from best effort.
    return;
  }
  // ACKs of prioritised messages ride in the most urgent class, as pFabric and PIAS assume.
  if (priority_ != TcpPriority::kNone) socket->SetIpTos(tos_of_level(0));
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

// Kept connections (GradientConnections::kPersistent).

void TcpTransport::send_on_connection(const Message& message, Delivered on_delivered) {
  auto& slot = connections_[{message.src, message.dst}];
  if (!slot) {
    slot = std::make_unique<Connection>();
    std::pair<std::uint32_t, std::uint16_t> source;
    slot->tx = open_connection(message.src, message.kind, &source);
    if (auto socket = ns3::DynamicCast<SimTcpSocket>(slot->tx)) {
      socket->set_linux_window_rules(true);
    }
    connection_by_source_[source] = slot.get();
    connection_by_socket_[ns3::PeekPointer(slot->tx)] = slot.get();
    slot->tx->SetConnectCallback(ns3::MakeCallback(&TcpTransport::on_connection_established, this),
                                 ns3::MakeCallback(&TcpTransport::on_connect_failed, this));
    slot->tx->SetSendCallback(ns3::MakeCallback(&TcpTransport::on_connection_writable, this));
    slot->tx->SetDataSentCallback(ns3::MakeCallback(&TcpTransport::on_connection_data_sent, this));
    slot->tx->Connect(ns3::InetSocketAddress(topology_.host_address[message.dst], kTcpPort));
  }
  Connection::Posted posted{message, std::move(on_delivered), ns3::Simulator::Now(), 0};
  posted.message.bytes = std::max<std::uint64_t>(1, message.bytes);
  const int urgency = library::priority_class(message.layer, message.num_layers);
  slot->waiting.emplace(std::make_pair(urgency, posted_++), std::move(posted));
  pump(*slot);
}

void TcpTransport::on_connection_established(ns3::Ptr<ns3::Socket> socket) {
  Connection& connection = *connection_by_socket_.at(ns3::PeekPointer(socket));
  connection.established = true;
  pump(connection);
}

void TcpTransport::on_connection_writable(ns3::Ptr<ns3::Socket> socket, std::uint32_t) {
  auto found = connection_by_socket_.find(ns3::PeekPointer(socket));
  if (found != connection_by_socket_.end()) pump(*found->second);
}

void TcpTransport::on_connection_data_sent(ns3::Ptr<ns3::Socket> socket, std::uint32_t bytes) {
  auto found = connection_by_socket_.find(ns3::PeekPointer(socket));
  if (found == connection_by_socket_.end()) return;
  Connection& connection = *found->second;
  connection.sent += bytes;
  update_tos(connection);
  pump(connection);
}

void TcpTransport::pump(Connection& connection) {
  if (!connection.established) return;
  while (true) {
    const bool current_left = connection.in_stream.empty() ||
                              (connection.written == connection.in_stream.back().stream_end &&
                               connection.sent >= connection.written);
    if (current_left) {
      // The current message has all left (or there is none): start the most urgent waiting one.
      // Writing the next only now keeps each sent byte's DSCP that of its own message.
      if (connection.waiting.empty()) return;
      Connection::Posted next = std::move(connection.waiting.begin()->second);
      connection.waiting.erase(connection.waiting.begin());
      next.stream_end = connection.written + next.message.bytes;
      connection.in_stream.push_back(std::move(next));
      update_tos(connection);
    }
    const std::uint64_t end = connection.in_stream.back().stream_end;
    while (connection.written < end) {
      const std::uint32_t room = connection.tx->GetTxAvailable();
      if (room == 0) return;  // on_connection_writable calls again
      const auto chunk = static_cast<std::uint32_t>(
          std::min<std::uint64_t>({room, end - connection.written, kMaxWrite}));
      const int accepted = connection.tx->Send(ns3::Create<ns3::Packet>(chunk));
      if (accepted <= 0) return;
      connection.written += static_cast<std::uint64_t>(accepted);
    }
    if (connection.sent < connection.written) return;  // on_connection_data_sent calls again
  }
}

void TcpTransport::update_tos(Connection& connection) {
  if (priority_ == TcpPriority::kNone || connection.in_stream.empty()) return;
  const Connection::Posted& current = connection.in_stream.back();
  const std::uint64_t start = current.stream_end - current.message.bytes;
  const std::uint64_t sent = connection.sent > start ? connection.sent - start : 0;
  set_level(*connection.tx, level_of_message(current.message.bytes, sent), &connection.level);
}

void TcpTransport::on_connection_readable(ns3::Ptr<ns3::Socket> socket) {
  auto found = connection_by_socket_.find(ns3::PeekPointer(socket));
  if (found == connection_by_socket_.end()) return;
  Connection& connection = *found->second;
  while (auto packet = socket->Recv()) connection.received += packet->GetSize();
  while (!connection.in_stream.empty() &&
         connection.received >= connection.in_stream.front().stream_end) {
    Connection::Posted done = std::move(connection.in_stream.front());
    connection.in_stream.pop_front();
    log_.finished(done.message, done.posted);
    if (done.on_delivered) done.on_delivered();
  }
}

}  // namespace dlcp::sim
