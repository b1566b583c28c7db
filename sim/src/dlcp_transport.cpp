#include "dlcp_transport.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "dlcp_tags.hpp"
#include "ns3/inet-socket-address.h"
#include "ns3/node.h"
#include "ns3/packet.h"
#include "ns3/simulator.h"
#include "ns3/socket.h"
#include "ns3/udp-socket-factory.h"
#include "protocol/send_queue.hpp"

namespace dlcp::sim {

namespace {

constexpr std::uint32_t kIpUdpHeaderBytes = 28;
constexpr std::uint32_t kDlcpHeaderBytes = 40;   // docs/protocol.md, data header
constexpr std::uint32_t kControlBaseBytes = 32;  // control header + fixed fields
constexpr std::uint16_t kControlPort = 9999;
constexpr std::uint16_t kDataPortBase = 10000;
constexpr std::uint8_t kEcnMask = 0b11;  // the ECN field of the TOS byte, cleared by --ablate ecn

ns3::Time transmit_time(std::uint32_t bytes, double rate_bits_per_s) {
  return ns3::Seconds(bytes * 8.0 / rate_bits_per_s);
}

}  // namespace

std::uint32_t dlcp_packet_floats(std::uint32_t mtu) {
  return (mtu - kIpUdpHeaderBytes - kDlcpHeaderBytes) / 4;
}

// One message, as both ends know it. The sender fills it when posting (the library sends these
// facts in FlowStart over its control channel); the sender's and the receiver's protocol state are
// the library's own (library::MessageSender, library::MessageReceiver), and the receiver learns of
// packets only through the network.
struct DlcpTransport::OutMessage {
  std::uint32_t index = 0;
  Message message;
  Delivered on_delivered;
  int priority_class = 0;
  std::uint64_t post_order = 0;
  std::uint8_t protected_tos = 0;
  std::uint8_t eligible_tos = 0;
  bool shared_band = false;  // paced by its peer's shared-band pacer as well (shared_band_pacer)
  ns3::Time posted;

  // Sender: freed once the receiver's Stop arrives.
  std::unique_ptr<library::MessageSender> sender;
  bool sender_done = false;
  ns3::EventId retry;

  // Receiver: freed once settled.
  std::unique_ptr<library::MessageReceiver> receiver;
  bool settled = false;
  bool mid_round = false;  // as last counted in its source's messages_mid_round
  ns3::Time last_stop;
  std::uint32_t report_round = 0;
  ns3::EventId report;
};

struct DlcpTransport::ControlMessage {
  enum class Type { kRoundFinished, kMissingRanges, kStop, kRateFeedback };
  ControlMessage(Type t, std::uint32_t m, std::uint32_t r) : type(t), message(m), round(r) {}

  Type type;
  int from = 0;  // set by send_control
  int to = 0;
  std::uint32_t message = 0;
  std::uint32_t round = 0;
  std::vector<library::SeqRange> missing;  // kMissingRanges: packets to resend
  struct {
    std::uint64_t bytes = 0, packets = 0, lost = 0, ce = 0;
    std::uint64_t shared_ce = 0;  // of ce, in the band the background shares
    double offered_rate = 0;      // bytes/s, 0 = no cap
  } feedback;                     // kRateFeedback
};

struct DlcpTransport::Host {
  struct Peer {  // a destination, as its sender sees it
    std::unique_ptr<library::PeerPacing> pacing;
    std::uint64_t counter = 0;
  };
  struct Source {  // a sender, as its receiver sees it, for rate feedback
    std::uint64_t bytes = 0;
    std::uint64_t packets = 0;
    std::uint64_t ce = 0;
    std::uint64_t shared_ce = 0;  // marks in the background's band (shared_band_pacer)
    std::uint64_t highest_counter = 0;
    std::uint64_t counter_at_report = 0;
    ns3::Time last_arrival = ns3::Time::Min();
    int messages_mid_round = 0;
  };

  int index = 0;
  ns3::Ptr<ns3::Node> node;
  std::vector<ns3::Ptr<ns3::Socket>> data_sockets;
  ns3::Ptr<ns3::Socket> control_socket;
  // The library's send order (protocol::SendQueue, header-only and C++17, so included here).
  protocol::SendQueue<OutMessage> send_queue;
  ns3::Time nic_free;
  ns3::EventId send_event;
  std::uint32_t next_path = 0;
  std::unordered_map<int, Peer> peers;
  std::map<int, Source> sources;
  ns3::EventId feedback_event;
  std::size_t counted_senders = 0;  // at the last report: the share the offers in force give
};

DlcpTransport::DlcpTransport(const Topology& topology, const library::Policy& policy,
                             const DlcpSimConfig& config, FlowLog& log, std::uint64_t seed)
    : topology_(topology), policy_(policy), config_(config), log_(log), rng_(seed) {
  const auto mtu = topology.hosts.Get(0)->GetDevice(1)->GetMtu();
  payload_bytes_ = dlcp_packet_floats(mtu) * 4;

  for (std::uint32_t h = 0; h < topology.hosts.GetN(); ++h) {
    auto host = std::make_unique<Host>();
    host->index = static_cast<int>(h);
    host->node = topology.hosts.Get(h);
    const auto udp = ns3::UdpSocketFactory::GetTypeId();
    for (int path = 0; path < config_.paths; ++path) {
      auto socket = ns3::Socket::CreateSocket(host->node, udp);
      socket->Bind(ns3::InetSocketAddress(ns3::Ipv4Address::GetAny(),
                                          static_cast<std::uint16_t>(kDataPortBase + path)));
      socket->SetIpRecvTos(true);  // to see CE marks
      socket->SetRecvCallback(ns3::MakeCallback(&DlcpTransport::on_data_readable, this));
      host->data_sockets.push_back(socket);
    }
    host->control_socket = ns3::Socket::CreateSocket(host->node, udp);
    host->control_socket->Bind(ns3::InetSocketAddress(ns3::Ipv4Address::GetAny(), kControlPort));
    host->control_socket->SetRecvCallback(
        ns3::MakeCallback(&DlcpTransport::on_control_readable, this));
    hosts_.push_back(std::move(host));
  }
}

DlcpTransport::~DlcpTransport() = default;

std::uint64_t DlcpTransport::full_packet() const {
  return payload_bytes_ + kDlcpHeaderBytes + kIpUdpHeaderBytes;
}

bool DlcpTransport::in_shared_band(std::uint8_t tos) const {
  return topology_.bands.shares_best_effort[tos >> 2];
}

void DlcpTransport::send(const Message& message, Delivered on_delivered) {
  auto out = std::make_unique<OutMessage>();
  OutMessage& m = *out;
  m.index = static_cast<std::uint32_t>(messages_.size());
  m.message = message;
  m.on_delivered = std::move(on_delivered);
  m.posted = ns3::Simulator::Now();
  m.post_order = post_order_++;

  const std::uint64_t bytes = std::max<std::uint64_t>(4, message.bytes / 4 * 4);
  const auto total_floats = static_cast<std::uint32_t>(bytes / 4);
  const std::uint32_t stride = payload_bytes_ / 4;
  const std::uint32_t packets = (total_floats + stride - 1) / stride;

  // The library's policy decides everything below.
  m.priority_class = library::priority_class(message.layer, message.num_layers);
  m.protected_tos = policy_.data_tos(m.priority_class, /*is_protected=*/true);
  m.eligible_tos = policy_.data_tos(m.priority_class, /*is_protected=*/false);
  if (!config_.drop_precedence) m.eligible_tos = m.protected_tos;
  if (!config_.ecn_capable) {
    m.protected_tos = static_cast<std::uint8_t>(m.protected_tos & ~kEcnMask);
    m.eligible_tos = static_cast<std::uint8_t>(m.eligible_tos & ~kEcnMask);
  }
  m.shared_band = config_.shared_band_pacer && in_shared_band(m.protected_tos);
  const std::uint32_t budget = library::budget_ppm(message.loss_budget);
  std::vector<std::uint8_t> protected_flags;
  if (budget == 0) {
    protected_flags.assign(packets, 1);  // a reliable message protects every packet
  } else {
    // One value per packet stands for that packet's mean |g| (stride 1), so ranking a synthetic
    // heavy-tailed gradient costs O(packets) rather than O(floats).
    std::lognormal_distribution<float> magnitude(0.0f, 1.0f);
    std::vector<float> mean_abs(packets);
    for (float& v : mean_abs) v = magnitude(rng_);
    protected_flags = policy_.protected_packets(mean_abs.data(), mean_abs.size(), 1);
  }
  const std::int64_t now_ns = m.posted.GetNanoSeconds();
  m.receiver = std::make_unique<library::MessageReceiver>(total_floats, stride, budget,
                                                          protected_flags, now_ns);
  m.sender =
      std::make_unique<library::MessageSender>(total_floats, stride, std::move(protected_flags));

  log_.started(message.kind);
  counters_.entries_total += total_floats;
  Host& host = *hosts_[static_cast<std::size_t>(message.src)];
  auto& peer = host.peers[message.dst];
  if (!peer.pacing) {
    // Starts at line rate, as the library starts at its configured initial rate, and is paced in
    // wire bytes, a full packet being the datagram, like the rate itself.
    peer.pacing = std::make_unique<library::PeerPacing>(
        line_rate_bytes(), min_rate_bytes(), line_rate_bytes(), config_.shared_band_pacer,
        full_packet(), feedback_interval_ns(), now_ns);
  }
  host.send_queue.push(&m, m.priority_class, m.post_order);
  messages_.push_back(std::move(out));
  try_send(message.src);
}

void DlcpTransport::try_send(int host_index) {
  Host& host = *hosts_[static_cast<std::size_t>(host_index)];
  if (host.send_event.IsRunning()) return;
  const ns3::Time now = ns3::Simulator::Now();
  if (host.nic_free > now) {
    host.send_event =
        ns3::Simulator::Schedule(host.nic_free - now, &DlcpTransport::try_send, this, host_index);
    return;
  }
  // The most urgent message whose peer's pacer allows a packet now.
  ns3::Time earliest = ns3::Time::Max();
  OutMessage* ready = nullptr;
  host.send_queue.visit([&](OutMessage& m) {
    auto& peer = host.peers[m.message.dst];
    const std::int64_t wait = peer.pacing->wait_ns(m.shared_band, now.GetNanoSeconds());
    if (wait == 0) {
      ready = &m;
      return false;
    }
    earliest = std::min(earliest, now + ns3::NanoSeconds(wait));
    return true;
  });
  if (ready != nullptr) {
    send_one_packet(host, *ready);
    host.send_event =
        ns3::Simulator::Schedule(host.nic_free - now, &DlcpTransport::try_send, this, host_index);
    return;
  }
  if (earliest != ns3::Time::Max()) {
    host.send_event =
        ns3::Simulator::Schedule(earliest - now, &DlcpTransport::try_send, this, host_index);
  }
}

void DlcpTransport::send_one_packet(Host& host, OutMessage& m) {
  const ns3::Time now = ns3::Simulator::Now();
  library::MessageSender& sender = *m.sender;
  const std::uint32_t seq = sender.take_next();
  const std::uint32_t payload = sender.floats_in(seq) * 4;
  auto packet = ns3::Create<ns3::Packet>(payload + kDlcpHeaderBytes);
  auto& peer = host.peers[m.message.dst];
  DlcpDataTag tag;
  tag.message = m.index;
  tag.seq = seq;
  tag.peer_counter = ++peer.counter;
  packet->AddPacketTag(tag);

  // Spray: consecutive packets leave from consecutive source ports, so the leaves' ECMP hash
  // spreads them over the spines.
  const std::uint32_t path = host.next_path++ % static_cast<std::uint32_t>(config_.paths);
  // ns-3.37's UdpSocket::SendTo takes the TOS byte from the address and ignores SetIpTos
  // (which only reaches Send on a connected socket): set it on the address.
  ns3::InetSocketAddress destination(topology_.host_address[m.message.dst],
                                     static_cast<std::uint16_t>(kDataPortBase + path));
  destination.SetTos(sender.sends_protected(seq) ? m.protected_tos : m.eligible_tos);
  host.data_sockets[path]->SendTo(packet, 0, destination);
  ++counters_.data_packets_sent;
  if (sender.round() > 0) ++counters_.retransmitted_packets;

  const std::uint32_t wire_bytes = payload + kDlcpHeaderBytes + kIpUdpHeaderBytes;
  host.nic_free = now + transmit_time(wire_bytes, topology_.host_rate_bps);
  peer.pacing->consume(wire_bytes, m.shared_band, now.GetNanoSeconds());

  if (!sender.has_next()) {
    host.send_queue.remove(&m, m.priority_class, m.post_order);
    send_control(host.index, m.message.dst,
                 ControlMessage(ControlMessage::Type::kRoundFinished, m.index, sender.round()));
    m.retry.Cancel();
    m.retry = ns3::Simulator::Schedule(micros(config_.control_retry_us), &DlcpTransport::on_retry,
                                       this, m.index);
  }
}

void DlcpTransport::send_control(int from, int to, ControlMessage control) {
  control.from = from;
  control.to = to;
  const std::uint32_t bytes =
      kControlBaseBytes + 8 * static_cast<std::uint32_t>(control.missing.size());
  auto packet = ns3::Create<ns3::Packet>(bytes);
  DlcpControlTag tag;
  tag.control = static_cast<std::uint32_t>(controls_.size());
  controls_.push_back(std::move(control));
  packet->AddPacketTag(tag);
  ns3::InetSocketAddress destination(topology_.host_address[to], kControlPort);
  destination.SetTos(policy_.control_tos());  // SendTo ignores the socket's own TOS
  hosts_[static_cast<std::size_t>(from)]->control_socket->SendTo(packet, 0, destination);
}

void DlcpTransport::on_control_readable(ns3::Ptr<ns3::Socket> socket) {
  while (auto packet = socket->Recv()) {
    DlcpControlTag tag;
    if (!packet->PeekPacketTag(tag)) continue;
    const ControlMessage& control = controls_[tag.control];
    switch (control.type) {
      case ControlMessage::Type::kRoundFinished:
        on_round_finished(control);
        break;
      case ControlMessage::Type::kMissingRanges:
        on_missing_ranges(control);
        break;
      case ControlMessage::Type::kStop:
        on_stop(control);
        break;
      case ControlMessage::Type::kRateFeedback:
        on_rate_feedback(control);
        break;
    }
  }
}

// ---- sender side ----

void DlcpTransport::on_missing_ranges(const ControlMessage& control) {
  OutMessage& m = *messages_[control.message];
  // A repeat (the receiver answered a repeated RoundFinished too) or a late one is ignored.
  if (m.sender_done || !m.sender->on_missing_ranges(control.round, control.missing)) return;
  m.retry.Cancel();
  Host& host = *hosts_[static_cast<std::size_t>(m.message.src)];
  host.send_queue.push(&m, m.priority_class, m.post_order);
  try_send(host.index);
}

void DlcpTransport::on_stop(const ControlMessage& control) {
  OutMessage& m = *messages_[control.message];
  if (m.sender_done) return;
  m.sender_done = true;
  m.retry.Cancel();
  if (m.sender->has_next()) {
    hosts_[static_cast<std::size_t>(m.message.src)]->send_queue.remove(&m, m.priority_class,
                                                                       m.post_order);
  }
  m.sender.reset();
}

void DlcpTransport::on_rate_feedback(const ControlMessage& control) {
  // Feedback comes from the receiver `control.from` to the sender `control.to`.
  Host& host = *hosts_[static_cast<std::size_t>(control.to)];
  auto found = host.peers.find(control.from);
  if (found == host.peers.end()) return;
  const auto& f = control.feedback;
  if (config_.shared_band_pacer) counters_.shared_band_marks += std::min(f.shared_ce, f.ce);
  found->second.pacing->on_report(feedback_interval_ns(), f.bytes, f.packets, f.lost, f.ce,
                                  f.shared_ce, f.offered_rate,
                                  ns3::Simulator::Now().GetNanoSeconds());
}

void DlcpTransport::on_retry(std::uint32_t message) {
  OutMessage& m = *messages_[message];
  if (m.sender_done || m.sender->has_next()) return;
  // Neither Stop nor MissingRanges came back: repeat RoundFinished (control packets can be lost).
  send_control(m.message.src, m.message.dst,
               ControlMessage(ControlMessage::Type::kRoundFinished, m.index, m.sender->round()));
  m.retry = ns3::Simulator::Schedule(micros(config_.control_retry_us), &DlcpTransport::on_retry,
                                     this, m.index);
}

// ---- receiver side ----

void DlcpTransport::on_data_readable(ns3::Ptr<ns3::Socket> socket) {
  while (auto packet = socket->Recv()) {
    DlcpDataTag tag;
    if (!packet->PeekPacketTag(tag)) continue;
    ns3::SocketIpTosTag tos;
    const bool ce = packet->PeekPacketTag(tos) && library::is_ce_marked(tos.GetTos());
    const OutMessage& m = *messages_[tag.message];
    Host& host = *hosts_[static_cast<std::size_t>(m.message.dst)];
    auto& source = host.sources[m.message.src];
    source.bytes += packet->GetSize();
    source.last_arrival = ns3::Simulator::Now();
    ++source.packets;
    if (ce) ++source.ce;
    if (ce && config_.shared_band_pacer && in_shared_band(tos.GetTos())) ++source.shared_ce;
    source.highest_counter = std::max(source.highest_counter, tag.peer_counter);
    if (!host.feedback_event.IsRunning()) {
      host.feedback_event = ns3::Simulator::Schedule(
          micros(config_.feedback_interval_us), &DlcpTransport::send_feedback, this, host.index);
    }
    on_data(tag.message, tag.seq);
  }
}

void DlcpTransport::send_feedback(int host_index) {
  Host& host = *hosts_[static_cast<std::size_t>(host_index)];
  // Counted as the library's engine counts them (protocol::counts_as_sender).
  const std::int64_t now = ns3::Simulator::Now().GetNanoSeconds();
  const std::int64_t interval = feedback_interval_ns();
  const std::int64_t window =
      library::sending_window_ns(interval, line_rate_bytes(), host.counted_senders, full_packet());
  std::size_t senders = 0;
  for (const auto& [sender, source] : host.sources) {
    if (source.last_arrival == ns3::Time::Min()) continue;
    if (library::counts_as_sender(now - source.last_arrival.GetNanoSeconds(),
                                  source.messages_mid_round > 0, interval, window)) {
      ++senders;
    }
  }
  host.counted_senders = senders;
  const double offered =
      config_.receiver_share ? library::offered_share(line_rate_bytes(), senders) : 0.0;
  for (auto& [sender, source] : host.sources) {
    if (source.packets == 0) continue;
    // Packets the sender numbered in this interval that did not arrive. Spraying reorders a
    // little, so one interval may over- or under-count; the sum over intervals is exact.
    const std::uint64_t numbered = source.highest_counter - source.counter_at_report;
    ControlMessage feedback(ControlMessage::Type::kRateFeedback, 0, 0);
    feedback.feedback.bytes = source.bytes;
    feedback.feedback.packets = source.packets;
    feedback.feedback.lost = library::packets_lost(numbered, source.packets);
    feedback.feedback.ce = source.ce;
    feedback.feedback.shared_ce = source.shared_ce;
    feedback.feedback.offered_rate = offered;
    source.counter_at_report = source.highest_counter;
    source.bytes = source.packets = source.ce = 0;
    source.shared_ce = 0;
    send_control(host_index, sender, std::move(feedback));
  }
  if (senders > 0) {
    host.feedback_event = ns3::Simulator::Schedule(micros(config_.feedback_interval_us),
                                                   &DlcpTransport::send_feedback, this, host_index);
  }
}

void DlcpTransport::on_data(std::uint32_t message, std::uint32_t seq) {
  OutMessage& m = *messages_[message];
  if (m.settled) {
    send_stop(m);  // the sender has not heard yet (Stop lost or still in flight)
    return;
  }
  if (!m.receiver->on_packet(seq, ns3::Simulator::Now().GetNanoSeconds())) return;
  sync_mid_round(m);
  if (m.receiver->settles()) settle(m);
}

void DlcpTransport::sync_mid_round(OutMessage& m) {
  const bool mid_round = !m.settled && m.receiver->mid_round();
  if (m.mid_round == mid_round) return;
  m.mid_round = mid_round;
  auto& source = hosts_[static_cast<std::size_t>(m.message.dst)]->sources[m.message.src];
  source.messages_mid_round += mid_round ? 1 : -1;
}

void DlcpTransport::settle(OutMessage& m) {
  m.settled = true;
  sync_mid_round(m);
  m.report.Cancel();
  ++counters_.messages_settled;
  const std::uint64_t missing = m.receiver->missing_floats();
  if (missing > 0) ++counters_.messages_settled_with_loss;
  counters_.entries_missing += missing;
  log_.finished(m.message, m.posted);
  m.receiver.reset();  // the receive state is no longer needed
  send_stop(m);
  if (m.on_delivered) m.on_delivered();
}

void DlcpTransport::send_stop(OutMessage& m) {
  const ns3::Time now = ns3::Simulator::Now();
  if (m.last_stop != ns3::Time() && now - m.last_stop < micros(config_.control_retry_us) / 2) {
    return;  // one Stop per half retry period is plenty
  }
  m.last_stop = now;
  send_control(m.message.dst, m.message.src,
               ControlMessage(ControlMessage::Type::kStop, m.index, m.report_round));
}

void DlcpTransport::on_round_finished(const ControlMessage& control) {
  OutMessage& m = *messages_[control.message];
  if (m.settled) {
    m.last_stop = ns3::Time();
    send_stop(m);
    return;
  }
  m.receiver->on_round_finished(control.round, ns3::Simulator::Now().GetNanoSeconds());
  sync_mid_round(m);
  m.report_round = control.round;
  m.report.Cancel();
  maybe_report(m.index);
}

void DlcpTransport::maybe_report(std::uint32_t message) {
  OutMessage& m = *messages_[message];
  if (m.settled) return;
  const std::int64_t now = ns3::Simulator::Now().GetNanoSeconds();
  const auto quiet = static_cast<std::int64_t>(config_.quiet_before_report_us * 1000.0);
  const std::int64_t due = m.receiver->report_due_ns(quiet);
  if (due < 0) return;
  if (due > now) {
    // Packets of this message may still be queued behind more urgent traffic: wait.
    m.report = ns3::Simulator::Schedule(ns3::NanoSeconds(due - now), &DlcpTransport::maybe_report,
                                        this, message);
    return;
  }
  // The margin against losing the retransmission follows the loss this host sees towards the
  // sender, as in the library's engine.
  const Host& host = *hosts_[static_cast<std::size_t>(m.message.dst)];
  const auto peer = host.peers.find(m.message.src);
  const double loss = peer != host.peers.end() ? peer->second.pacing->last_loss() : 0.0;
  ControlMessage report(ControlMessage::Type::kMissingRanges, m.index, 0);
  if (!m.receiver->take_report(now, quiet, loss, report.round, report.missing)) return;
  ++counters_.missing_reports;
  send_control(m.message.dst, m.message.src, std::move(report));
}

}  // namespace dlcp::sim
