#include "transport/data_plane.hpp"

#include <algorithm>
#include <bit>

#include "common/net.hpp"
#include "policy/policy.hpp"
#include "wire/values.hpp"

namespace dlcp::transport {
namespace {

// Payload floats go to the kernel straight from the caller's buffer; the wire order is
// little-endian, so that is only valid on little-endian hosts.
static_assert(std::endian::native == std::endian::little,
              "dlcp's zero-copy send path assumes a little-endian host");

// Datagrams at least this large (on average over a batch) are read straight into place.
constexpr std::size_t kDirectPlacementBytes = 8192;

}  // namespace

DataPlane::DataPlane(const TransportOptions& options, std::uint32_t bind_ipv4)
    : options_(options), peers_(static_cast<std::size_t>(std::max(options.world_size, 0))) {
  const auto batch = static_cast<std::size_t>(options_.batch);
  for (int k = 0; k < options_.paths; ++k) {
    std::uint32_t ipv4 = bind_ipv4;
    if (!options_.local_addresses.empty()) {
      ipv4 = net::resolve_ipv4(
          options_.local_addresses[static_cast<std::size_t>(k) % options_.local_addresses.size()]);
    }
    sockets_.emplace_back(ipv4, options_.socket_buffer_bytes, batch, kMaxDatagram);
  }
  direct_receive_.assign(sockets_.size(), 0);
  if (options_.inject.enabled()) injector_.emplace(options_.inject);
  expectations_ = {options_.job_token, static_cast<std::uint16_t>(options_.rank),
                   static_cast<std::uint32_t>(options_.world_size), options_.packet_mac};
  trailer_bytes_ = options_.packet_mac ? wire::kMacTrailerBytes : 0;
  iov_per_packet_ = options_.packet_mac ? 3 : 2;
  header_scratch_.resize(batch * wire::kDataHeaderBytes);
  trailer_scratch_.resize(batch * trailer_bytes_);
  iov_scratch_.resize(iov_per_packet_ * batch);
  per_socket_.resize(sockets_.size());
  per_socket_runs_.resize(sockets_.size());
}

bool DataPlane::gso() const {
  return std::all_of(sockets_.begin(), sockets_.end(),
                     [](const DataSocket& socket) { return socket.gso_enabled(); });
}

void DataPlane::add_peer(int rank, std::vector<sockaddr_in> addresses,
                         std::optional<PacketMac> send, std::optional<PacketMac> receive) {
  PeerKeys& peer = peers_[static_cast<std::size_t>(rank)];
  peer.addresses = std::move(addresses);
  peer.mac_send = std::move(send);
  peer.mac_receive = std::move(receive);
  if (peer.mac_receive) peer.replay.emplace();
}

std::size_t DataPlane::send(protocol::Burst& burst) {
  PeerKeys& peer = peers_[static_cast<std::size_t>(burst.peer)];
  const std::size_t packets = burst.packets.size();
  const WireDtype dtype = burst.packets.front().header.wire;
  const std::size_t slot_bytes =
      burst.datagram_bytes - wire::kDataHeaderBytes - trailer_bytes_;  // a full payload
  if (dtype != WireDtype::kFloat32 && payload_scratch_.size() < packets * slot_bytes) {
    payload_scratch_.resize(packets * slot_bytes);
  }
  for (auto& list : per_socket_) list.clear();
  for (auto& list : per_socket_runs_) list.clear();
  for (std::size_t r = 0; r < burst.runs.size(); ++r) {
    const protocol::Burst::Run& run = burst.runs[r];
    const std::size_t socket = run.path % sockets_.size();
    for (std::size_t k = run.first; k < run.first + run.count; ++k) {
      const protocol::OutgoingPacket& packet = burst.packets[k];
      const std::span<std::byte> header(&header_scratch_[k * wire::kDataHeaderBytes],
                                        wire::kDataHeaderBytes);
      wire::encode_data_header(packet.header, header);
      std::span<const std::byte> payload = std::as_bytes(packet.values);
      if (!packet.payload.empty()) {
        payload = packet.payload;  // a parity packet, encoded by the endpoint
      } else if (dtype != WireDtype::kFloat32) {
        const std::span<std::byte> converted(&payload_scratch_[k * slot_bytes],
                                             packet.header.payload_bytes);
        wire::encode_values(packet.values, dtype, converted);
        payload = converted;
      }
      iovec* iov = &iov_scratch_[iov_per_packet_ * k];
      iov[0] = {header.data(), header.size()};
      iov[1] = {const_cast<std::byte*>(payload.data()), payload.size()};
      if (peer.mac_send) {
        const std::span<std::byte> trailer(&trailer_scratch_[k * wire::kMacTrailerBytes],
                                           wire::kMacTrailerBytes);
        const std::uint64_t counter = peer.mac_counter++;
        wire::encode_mac_trailer({counter, peer.mac_send->compute(counter, header, payload)},
                                 trailer);
        iov[2] = {trailer.data(), trailer.size()};
      }
    }
    per_socket_[socket].push_back(
        {&peer.addresses[run.path],
         std::span<const iovec>(&iov_scratch_[iov_per_packet_ * run.first],
                                iov_per_packet_ * run.count),
         static_cast<std::uint16_t>(run.count > 1 ? burst.datagram_bytes : 0),
         burst.packets[run.first].tos});
    per_socket_runs_[socket].push_back(r);
  }
  burst.run_sent.assign(burst.runs.size(), 0);
  std::size_t sent_datagrams = 0;
  for (std::size_t socket = 0; socket < sockets_.size(); ++socket) {
    auto& list = per_socket_[socket];
    if (list.empty()) continue;
    const std::size_t sent = sockets_[socket].send_batch(list);
    for (std::size_t i = 0; i < sent; ++i) {
      const std::size_t r = per_socket_runs_[socket][i];
      burst.run_sent[r] = 1;
      sent_datagrams += burst.runs[r].count;
    }
  }
  return sent_datagrams;
}

void DataPlane::receive(std::size_t index, protocol::Endpoint& endpoint, TimePoint now) {
  if (direct_receive_[index]) return receive_direct(index, endpoint, now);
  receive_batch(index, endpoint, now);
}

void DataPlane::receive_batch(std::size_t index, protocol::Endpoint& endpoint, TimePoint now) {
  const auto batch = sockets_[index].receive_batch();
  std::size_t bytes = 0;
  for (const auto& datagram : batch) {
    bytes += datagram.bytes.size();
    ++counted_.datagrams_received;
    counted_.bytes_received += datagram.bytes.size();
    auto decoded = wire::decode_data_packet(datagram.bytes, expectations_);
    if (!decoded) {
      rejects_.add(decoded.error());
      continue;
    }
    const wire::DataHeader& header = *decoded;
    if (!authenticate(header, datagram.bytes) || injected_drop(header)) continue;
    endpoint.on_datagram(header, datagram.bytes, marked(header, datagram.tos), index, now);
  }
  // Large datagrams are worth a peek syscall each to save copying their payload twice. Not with
  // packet MACs: a payload must be verified before it may touch the caller's buffer.
  if (!batch.empty() && bytes >= kDirectPlacementBytes * batch.size() && !options_.packet_mac) {
    direct_receive_[index] = 1;
  }
}

void DataPlane::receive_direct(std::size_t index, protocol::Endpoint& endpoint, TimePoint now) {
  DataSocket& socket = sockets_[index];
  std::array<std::byte, wire::kDataHeaderBytes> header_bytes;
  // One batch per socket per wakeup, as on the batched path: sockets are serviced in turn, which
  // bounds how far arrival order strays from send order (see DeliveryMeter).
  for (int i = 0; i < options_.batch; ++i) {
    const std::optional<std::size_t> peeked = socket.peek(header_bytes);
    if (!peeked) return;
    const std::size_t size = *peeked;
    if (size < kDirectPlacementBytes) {
      // Small (or empty) datagrams again: the batched path reads and counts them.
      direct_receive_[index] = 0;
      return receive_batch(index, endpoint, now);
    }
    ++counted_.datagrams_received;
    counted_.bytes_received += size;
    auto decoded = wire::decode_data_header(header_bytes, size, expectations_);
    if (!decoded) {
      rejects_.add(decoded.error());
      socket.discard();
      continue;
    }
    const wire::DataHeader& header = *decoded;
    if (injected_drop(header)) {
      socket.discard();
      continue;
    }
    const protocol::DirectPlacement placement = endpoint.direct_placement(header, size, index, now);
    std::uint8_t tos = 0;
    switch (placement.action) {
      case protocol::DirectPlacement::Action::kDiscard:
        socket.discard();
        continue;
      case protocol::DirectPlacement::Action::kPlace:
        if (header.wire == WireDtype::kFloat32) {
          socket.receive_into(header_bytes, std::as_writable_bytes(placement.target), tos);
        } else {
          // 16-bit values need converting: through a scratch buffer, then into place.
          const std::span<std::byte> payload(direct_scratch_.data(), header.payload_bytes);
          socket.receive_into(header_bytes, payload, tos);
          wire::decode_values(payload, header.wire, placement.target);
        }
        endpoint.on_placed(header, marked(header, tos), now);
        break;
      case protocol::DirectPlacement::Action::kHold: {
        std::vector<std::byte> copy(size);
        socket.receive_into(std::span(copy).first(wire::kDataHeaderBytes),
                            std::span(copy).subspan(wire::kDataHeaderBytes), tos);
        endpoint.hold(header, std::move(copy), marked(header, tos), now);
        break;
      }
    }
  }
}

bool DataPlane::authenticate(const wire::DataHeader& header, std::span<const std::byte> datagram) {
  // The decoder has already refused packets whose trailer disagrees with the job's setting.
  if (!header.is_authenticated()) return true;
  PeerKeys& peer = peers_[header.src_rank];
  if (!peer.mac_receive) {
    rejects_.add(wire::RejectReason::kBadSourceRank);  // no connection, so no key
    return false;
  }
  const auto header_bytes = datagram.first(wire::kDataHeaderBytes);
  const auto payload = datagram.subspan(wire::kDataHeaderBytes, header.payload_bytes);
  const wire::MacTrailer trailer =
      wire::decode_mac_trailer(datagram.subspan(wire::kDataHeaderBytes + header.payload_bytes));
  // The MAC first: a forgery is named as such whatever counter it claims.
  if (!peer.mac_receive->verify(trailer.counter, header_bytes, payload, trailer.tag)) {
    rejects_.add(wire::RejectReason::kBadMac);
    return false;
  }
  if (!peer.replay->fresh(trailer.counter)) {
    rejects_.add(wire::RejectReason::kReplayed);
    return false;
  }
  // Only an authentic packet may move the window, or forgeries could push real packets out.
  peer.replay->record(trailer.counter);
  return true;
}

bool DataPlane::injected_drop(const wire::DataHeader& header) {
  if (!injector_ || !injector_->should_drop(header.priority_class, header.src_rank)) return false;
  ++counted_.injected_drops;
  return true;
}

std::uint8_t DataPlane::marked(const wire::DataHeader& header, std::uint8_t tos) {
  if (policy::is_ce_marked(tos) || !injector_ || !injector_->should_mark(header.priority_class)) {
    return tos;
  }
  ++counted_.injected_marks;
  // Read as the class's codepoint with a CE mark, so the mark lands in the class's band.
  constexpr std::uint8_t kCe = 0b11;
  return static_cast<std::uint8_t>(
      policy::data_tos(options_.policy, header.priority_class, policy::Precedence::kProtected) |
      kCe);
}

void DataPlane::add_counters(TransportCounters& counters) const {
  counters.datagrams_received += counted_.datagrams_received;
  counters.bytes_received += counted_.bytes_received;
  counters.injected_drops += counted_.injected_drops;
  counters.injected_marks += counted_.injected_marks;
}

}  // namespace dlcp::transport
