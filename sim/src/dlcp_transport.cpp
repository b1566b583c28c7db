#include "dlcp_transport.hpp"

#include <algorithm>
#include <cstring>
#include <iostream>
#include <limits>

#include "ns3/inet-socket-address.h"
#include "ns3/node.h"
#include "ns3/packet.h"
#include "ns3/simulator.h"
#include "ns3/socket.h"
#include "ns3/udp-socket-factory.h"

namespace dlcp::sim {

namespace {

constexpr std::uint32_t kIpUdpHeaderBytes = 28;
constexpr std::uint32_t kDlcpHeaderBytes = 40;  // docs/protocol.md, data header
constexpr std::uint16_t kControlPort = 9999;
constexpr std::uint16_t kDataPortBase = 10000;

// The control channel's own header before each frame: u8 kind, u16 sender, u32 sequence number
// (kFrame) or the next sequence number expected (kAck), little-endian.
constexpr std::uint8_t kFrame = 0;
constexpr std::uint8_t kAck = 1;
constexpr std::size_t kChannelHeaderBytes = 7;

ns3::Time transmit_time(std::uint32_t bytes, double rate_bits_per_s) {
  return ns3::Seconds(bytes * 8.0 / rate_bits_per_s);
}

std::int64_t now_ns() {
  return ns3::Simulator::Now().GetNanoSeconds();
}

void put_channel_header(std::uint8_t* out, std::uint8_t kind, int from, std::uint32_t value) {
  out[0] = kind;
  out[1] = static_cast<std::uint8_t>(from & 0xff);
  out[2] = static_cast<std::uint8_t>((from >> 8) & 0xff);
  for (int i = 0; i < 4; ++i) out[3 + i] = static_cast<std::uint8_t>((value >> (8 * i)) & 0xff);
}

}  // namespace

std::uint32_t dlcp_packet_floats(std::uint32_t mtu) {
  return (mtu - kIpUdpHeaderBytes - kDlcpHeaderBytes) / 4;
}

// A message the workload asked for: what the driver needs to hand it back. Its protocol state is
// in the two endpoints (token = index here; message id = index on the wire).
struct DlcpTransport::Record {
  Message message;
  Delivered on_delivered;
  ns3::Time posted;
};

struct DlcpTransport::Host {
  // One direction of a host pair's control channel.
  struct OutChannel {
    std::uint32_t next_seq = 0;
    std::deque<std::pair<std::uint32_t, std::vector<std::uint8_t>>> unacked;
    ns3::EventId retry;
  };
  struct InChannel {
    std::uint32_t expected = 0;
    std::map<std::uint32_t, std::vector<std::uint8_t>> early;  // arrived out of order
  };

  int index = 0;
  ns3::Ptr<ns3::Node> node;
  std::unique_ptr<library::HostEndpoint> endpoint;
  std::vector<ns3::Ptr<ns3::Socket>> data_sockets;
  ns3::Ptr<ns3::Socket> control_socket;
  ns3::Time nic_free;
  ns3::EventId send_event;
  ns3::EventId timeout_event;
  std::vector<OutChannel> out;  // by peer
  std::vector<InChannel> in;    // by peer
};

DlcpTransport::DlcpTransport(const Topology& topology, const library::Policy& policy,
                             const DlcpSimConfig& config, FlowLog& log, std::uint64_t seed)
    : topology_(topology), policy_(policy), config_(config), log_(log), rng_(seed) {
  const auto mtu = topology.hosts.Get(0)->GetDevice(1)->GetMtu();
  stride_ = dlcp_packet_floats(mtu);
  const int hosts = static_cast<int>(topology.hosts.GetN());

  library::HostEndpointOptions options;
  options.world_size = hosts;
  options.line_rate_bytes = line_rate_bytes();
  options.shared_band_pacing = config_.shared_band_pacer;
  options.feedback_interval_ns = micros(config_.feedback_interval_us).GetNanoSeconds();
  options.quiet_before_report_ns = micros(config_.quiet_before_report_us).GetNanoSeconds();
  options.offer_receive_share = config_.receiver_share;
  options.ecn_capable = config_.ecn_capable;
  options.drop_precedence = config_.drop_precedence;
  options.parity_members = static_cast<std::uint8_t>(config_.parity_members);
  options.shared_band_dscps = topology_.bands.shares_best_effort;
  options.datagram_overhead_bytes = kIpUdpHeaderBytes;
  options.burst_packets = 1;
  options.max_run_packets = 1;

  library::PeerPath path;
  path.datagram_bytes = kDlcpHeaderBytes + stride_ * 4;
  path.stride = static_cast<std::uint16_t>(stride_);
  path.send_paths = static_cast<std::size_t>(config_.paths);
  path.receive_paths = static_cast<std::size_t>(config_.paths);

  const std::int64_t now = now_ns();
  for (int h = 0; h < hosts; ++h) {
    auto host = std::make_unique<Host>();
    host->index = h;
    host->node = topology.hosts.Get(static_cast<std::uint32_t>(h));
    options.rank = h;
    host->endpoint = std::make_unique<library::HostEndpoint>(policy_, options);
    for (int peer = 0; peer < hosts; ++peer) {
      if (peer != h) host->endpoint->peer_joined(peer, path, now);
    }
    host->out.resize(static_cast<std::size_t>(hosts));
    host->in.resize(static_cast<std::size_t>(hosts));
    const auto udp = ns3::UdpSocketFactory::GetTypeId();
    for (int p = 0; p < config_.paths; ++p) {
      auto socket = ns3::Socket::CreateSocket(host->node, udp);
      socket->Bind(ns3::InetSocketAddress(ns3::Ipv4Address::GetAny(),
                                          static_cast<std::uint16_t>(kDataPortBase + p)));
      socket->SetIpRecvTos(true);  // to see CE marks
      socket->SetRecvCallback(ns3::MakeCallback(&DlcpTransport::on_data_readable, this));
      data_socket_of_[ns3::PeekPointer(socket)] = {h, static_cast<std::size_t>(p)};
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

DlcpCounters DlcpTransport::counters() const {
  DlcpCounters c = counters_;
  for (const auto& host : hosts_) {
    const library::HostCounters& h = host->endpoint->counters();
    c.missing_reports += h.missing_reports;
    c.packets_rebuilt += h.packets_rebuilt;
    if (config_.shared_band_pacer) c.shared_band_marks += h.shared_band_marks;
    c.rejected += h.rejected;
  }
  return c;
}

void DlcpTransport::send(const Message& message, Delivered on_delivered) {
  const auto index = static_cast<std::uint64_t>(messages_.size());
  messages_.push_back({message, std::move(on_delivered), ns3::Simulator::Now()});

  const std::uint64_t bytes = std::max<std::uint64_t>(4, message.bytes / 4 * 4);
  const auto total_floats = static_cast<std::uint32_t>(bytes / 4);
  const std::uint32_t packets = (total_floats + stride_ - 1) / stride_;

  library::Request request;
  request.message_id = index;
  request.token = index;
  request.total_floats = total_floats;
  request.layer = message.layer;
  request.num_layers = message.num_layers;
  request.loss_budget = message.loss_budget;
  request.deadline_ms = config_.deadline_ms;
  if (library::budget_ppm(message.loss_budget) != 0) {
    // One value per packet stands for that packet's mean |g| (stride 1), so ranking a synthetic
    // heavy-tailed gradient costs O(packets) rather than O(floats).
    std::lognormal_distribution<float> magnitude(0.0f, 1.0f);
    std::vector<float> mean_abs(packets);
    for (float& v : mean_abs) v = magnitude(rng_);
    request.protected_flags = policy_.protected_packets(mean_abs.data(), mean_abs.size(), 1);
  }
  log_.started(message.kind);
  counters_.entries_total += total_floats;

  const std::int64_t now = now_ns();
  library::Request receive = request;
  receive.protected_flags.clear();
  receive.peer = message.src;
  receive.budget_group = message.budget_group;
  receive.budget_group_size = message.budget_group_size;
  hosts_[static_cast<std::size_t>(message.dst)]->endpoint->post_receive(receive, now);
  request.peer = message.dst;
  hosts_[static_cast<std::size_t>(message.src)]->endpoint->post_send(request, now);
  pump(message.dst);
  pump(message.src);
}

void DlcpTransport::pump(int host_index) {
  Host& host = *hosts_[static_cast<std::size_t>(host_index)];
  while (host.endpoint->has_outputs()) {
    library::HostOutputs out;  // a local: completions may post (and pump) again
    host.endpoint->take_outputs(out);
    for (auto& frame : out.control) {
      ++counters_.control_frames;
      send_frame(host_index, frame.peer, std::move(frame.bytes));
    }
    for (int peer : out.lost_peers) {
      fail("host " + std::to_string(host_index) + " lost peer " + std::to_string(peer));
    }
    for (const auto& done : out.completions) {
      on_completion(host_index, done.token, done.is_send, done.ok, done.error,
                    done.entries_missing);
    }
  }
  arm(host_index);
}

void DlcpTransport::on_completion(int host_index, std::uint64_t token, bool is_send, bool ok,
                                  const std::string& error, std::uint64_t entries_missing) {
  if (!ok) {
    ++counters_.messages_failed;
    fail("host " + std::to_string(host_index) + ": " + (is_send ? "send" : "receive") +
         " of message " + std::to_string(token) + " failed: " + error);
    return;
  }
  if (is_send) return;
  Record& record = messages_[token];
  ++counters_.messages_settled;
  if (entries_missing > 0) ++counters_.messages_settled_with_loss;
  counters_.entries_missing += entries_missing;
  log_.finished(record.message, record.posted);
  Delivered delivered = std::move(record.on_delivered);  // it may post (and grow messages_)
  if (delivered) delivered();
}

void DlcpTransport::fail(const std::string& what) {
  const std::string line =
      "at " + std::to_string(ns3::Simulator::Now().GetMicroSeconds()) + " us " + what;
  std::cerr << "dlcp-sim: " << line << "\n";
  if (!counters_.first_failure.empty()) return;
  counters_.first_failure = line;
  ns3::Simulator::Stop();
}

void DlcpTransport::arm(int host_index) {
  Host& host = *hosts_[static_cast<std::size_t>(host_index)];
  const ns3::Time now = ns3::Simulator::Now();
  const std::int64_t now_i = now.GetNanoSeconds();

  // Sending: when the NIC is free and the endpoint has a packet the pacers allow.
  ns3::Time send_at = ns3::Time::Max();
  const std::int64_t next_send = host.endpoint->next_send_ns(now_i);
  if (next_send >= 0) {
    send_at = std::max({ns3::NanoSeconds(next_send), host.nic_free, now});
  }
  if (send_at == ns3::Time::Max()) {
    host.send_event.Cancel();
  } else if (!host.send_event.IsRunning() ||
             ns3::Simulator::GetDelayLeft(host.send_event) > send_at - now) {
    host.send_event.Cancel();
    host.send_event =
        ns3::Simulator::Schedule(send_at - now, &DlcpTransport::on_send_slot, this, host_index);
  }

  // Timers: deadlines, missing-range reports, rate reports.
  const std::int64_t timeout = host.endpoint->next_timeout_ns(now_i);
  if (timeout == std::numeric_limits<std::int64_t>::max()) {
    host.timeout_event.Cancel();
    return;
  }
  const ns3::Time timeout_at = std::max(ns3::NanoSeconds(timeout), now);
  if (host.timeout_event.IsRunning() &&
      ns3::Simulator::GetDelayLeft(host.timeout_event) == timeout_at - now) {
    return;
  }
  host.timeout_event.Cancel();
  host.timeout_event =
      ns3::Simulator::Schedule(timeout_at - now, &DlcpTransport::on_timeout, this, host_index);
}

void DlcpTransport::on_timeout(int host_index) {
  Host& host = *hosts_[static_cast<std::size_t>(host_index)];
  host.endpoint->on_timeout(now_ns());
  pump(host_index);
}

void DlcpTransport::on_send_slot(int host_index) {
  Host& host = *hosts_[static_cast<std::size_t>(host_index)];
  const ns3::Time now = ns3::Simulator::Now();
  if (host.nic_free <= now && host.endpoint->next_burst(now.GetNanoSeconds(), burst_)) {
    std::uint32_t wire_bytes = 0;
    for (const library::DataPacket& p : burst_) {
      auto packet = ns3::Create<ns3::Packet>(p.header.data(), kDlcpHeaderBytes);
      packet->AddAtEnd(ns3::Create<ns3::Packet>(p.payload_bytes));  // zero-filled, virtual
      // ns-3.37's UdpSocket::SendTo takes the TOS byte from the address and ignores SetIpTos
      // (which only reaches Send on a connected socket): set it on the address.
      ns3::InetSocketAddress destination(topology_.host_address[p.peer],
                                         static_cast<std::uint16_t>(kDataPortBase + p.path));
      destination.SetTos(p.tos);
      host.data_sockets[p.path % host.data_sockets.size()]->SendTo(packet, 0, destination);
      ++counters_.data_packets_sent;
      if (p.retransmission) ++counters_.retransmitted_packets;
      if ((p.flags & library::kParityFlag) != 0) ++counters_.parity_sent;
      wire_bytes += kDlcpHeaderBytes + p.payload_bytes + kIpUdpHeaderBytes;
    }
    host.nic_free = now + transmit_time(wire_bytes, topology_.host_rate_bps);
    host.endpoint->burst_sent(now.GetNanoSeconds());
  }
  pump(host_index);
}

void DlcpTransport::on_data_readable(ns3::Ptr<ns3::Socket> socket) {
  const auto [host_index, path] = data_socket_of_.at(ns3::PeekPointer(socket));
  Host& host = *hosts_[static_cast<std::size_t>(host_index)];
  std::uint8_t header[kDlcpHeaderBytes];
  while (auto packet = socket->Recv()) {
    const std::uint32_t size = packet->GetSize();
    if (size < kDlcpHeaderBytes) {
      ++counters_.rejected;
      continue;
    }
    packet->CopyData(header, kDlcpHeaderBytes);
    ns3::SocketIpTosTag tos;
    const std::uint8_t tos_byte = packet->PeekPacketTag(tos) ? tos.GetTos() : 0;
    host.endpoint->on_datagram(header, size - kDlcpHeaderBytes, tos_byte, path, now_ns());
  }
  pump(host_index);
}

// ---- the control channel: reliable, in-order frames per host pair ----

void DlcpTransport::send_frame(int from, int to, std::vector<std::uint8_t> frame) {
  Host::OutChannel& channel =
      hosts_[static_cast<std::size_t>(from)]->out[static_cast<std::size_t>(to)];
  const std::uint32_t seq = channel.next_seq++;
  transmit_frame(from, to, seq, frame);
  channel.unacked.emplace_back(seq, std::move(frame));
  if (!channel.retry.IsRunning()) {
    channel.retry = ns3::Simulator::Schedule(control_retry(from, to),
                                             &DlcpTransport::on_control_retry, this, from, to);
  }
}

void DlcpTransport::transmit_frame(int from, int to, std::uint32_t seq,
                                   const std::vector<std::uint8_t>& frame) {
  std::vector<std::uint8_t> bytes(kChannelHeaderBytes + frame.size());
  put_channel_header(bytes.data(), kFrame, from, seq);
  std::memcpy(bytes.data() + kChannelHeaderBytes, frame.data(), frame.size());
  auto packet = ns3::Create<ns3::Packet>(bytes.data(), static_cast<std::uint32_t>(bytes.size()));
  ns3::InetSocketAddress destination(topology_.host_address[to], kControlPort);
  destination.SetTos(policy_.control_tos());  // SendTo ignores the socket's own TOS
  hosts_[static_cast<std::size_t>(from)]->control_socket->SendTo(packet, 0, destination);
}

void DlcpTransport::send_ack(int from, int to, std::uint32_t next_expected) {
  std::uint8_t bytes[kChannelHeaderBytes];
  put_channel_header(bytes, kAck, from, next_expected);
  auto packet = ns3::Create<ns3::Packet>(bytes, static_cast<std::uint32_t>(kChannelHeaderBytes));
  ns3::InetSocketAddress destination(topology_.host_address[to], kControlPort);
  destination.SetTos(policy_.control_tos());
  hosts_[static_cast<std::size_t>(from)]->control_socket->SendTo(packet, 0, destination);
}

ns3::Time DlcpTransport::control_retry(int from, int to) const {
  return micros(config_.control_retry_us) + topology_.added_round_trip(from, to);
}

void DlcpTransport::on_control_retry(int from, int to) {
  Host::OutChannel& channel =
      hosts_[static_cast<std::size_t>(from)]->out[static_cast<std::size_t>(to)];
  if (channel.unacked.empty()) return;
  for (const auto& [seq, frame] : channel.unacked) {
    transmit_frame(from, to, seq, frame);
    ++counters_.control_retransmissions;
  }
  channel.retry = ns3::Simulator::Schedule(control_retry(from, to),
                                           &DlcpTransport::on_control_retry, this, from, to);
}

void DlcpTransport::on_control_readable(ns3::Ptr<ns3::Socket> socket) {
  int host_index = -1;
  std::vector<std::uint8_t> bytes;
  while (auto packet = socket->Recv()) {
    const std::uint32_t size = packet->GetSize();
    if (size < kChannelHeaderBytes) continue;
    bytes.resize(size);
    packet->CopyData(bytes.data(), size);
    const int from = bytes[1] | (bytes[2] << 8);
    std::uint32_t value = 0;
    for (int i = 0; i < 4; ++i) value |= static_cast<std::uint32_t>(bytes[3 + i]) << (8 * i);
    if (host_index < 0) {
      for (const auto& h : hosts_) {
        if (h->control_socket == socket) host_index = h->index;
      }
    }
    Host& host = *hosts_[static_cast<std::size_t>(host_index)];
    if (bytes[0] == kAck) {
      Host::OutChannel& channel = host.out[static_cast<std::size_t>(from)];
      bool advanced = false;
      while (!channel.unacked.empty() && channel.unacked.front().first < value) {
        channel.unacked.pop_front();
        advanced = true;
      }
      if (channel.unacked.empty()) {
        channel.retry.Cancel();
      } else if (advanced) {
        channel.retry.Cancel();
        channel.retry =
            ns3::Simulator::Schedule(control_retry(host_index, from),
                                     &DlcpTransport::on_control_retry, this, host_index, from);
      }
      continue;
    }
    Host::InChannel& channel = host.in[static_cast<std::size_t>(from)];
    if (value >= channel.expected) {
      channel.early.emplace(
          value, std::vector<std::uint8_t>(bytes.begin() + kChannelHeaderBytes, bytes.end()));
    }
    // Deliver in order whatever is now contiguous.
    for (auto it = channel.early.begin();
         it != channel.early.end() && it->first == channel.expected; it = channel.early.erase(it)) {
      ++channel.expected;
      host.endpoint->on_control(from, it->second.data(), it->second.size(), now_ns());
    }
    send_ack(host_index, from, channel.expected);
  }
  if (host_index >= 0) pump(host_index);
}

}  // namespace dlcp::sim
