// The local path's writing side: small records in order, then data chunks of the most urgent
// ready message (the lowest priority class, then the oldest), whole packets at a time.
#include <algorithm>

#include "transport/local_path.hpp"
#include "wire/data_header.hpp"
#include "wire/values.hpp"

namespace dlcp::transport {

void LocalPath::queue_record(Peer& p, local::Kind kind, std::span<const std::byte> bytes) {
  if (!p.link || p.failure) return;
  p.records.push_back({kind, std::vector<std::byte>(bytes.begin(), bytes.end())});
}

void LocalPath::refuse(Peer& p, std::uint64_t send_seq, ErrorCode code, const std::string& why) {
  const std::string reason = why.substr(0, local::kMaxReasonBytes);
  local::Refused refused{send_seq, static_cast<std::uint32_t>(code),
                         static_cast<std::uint32_t>(reason.size())};
  std::vector<std::byte> bytes(sizeof(refused) + reason.size());
  local::put(bytes, refused);
  std::memcpy(bytes.data() + sizeof(refused), reason.data(), reason.size());
  queue_record(p, local::Kind::kRefused, bytes);
}

void LocalPath::write_records(Peer& p) {
  while (!p.records.empty()) {
    const PendingRecord& record = p.records.front();
    const auto room = p.out.reserve(record.bytes.size());
    if (room.empty() && !record.bytes.empty()) return;
    std::copy(record.bytes.begin(), record.bytes.end(), room.begin());
    p.out.commit(static_cast<std::uint32_t>(record.kind), record.bytes.size());
    p.records.pop_front();
    p.wake_peer = true;
  }
  while (Outgoing* message = next_ready(p)) {
    if (!write_chunk(p, *message)) return;
    p.wake_peer = true;
  }
}

LocalPath::Outgoing* LocalPath::next_ready(Peer& p) {
  Outgoing* best = nullptr;
  for (std::size_t i = 0; i < p.ready.size();) {
    const auto it = p.outgoing.find(p.ready[i]);
    if (it == p.outgoing.end() || it->second.next_packet == it->second.shape.packets) {
      p.ready[i] = p.ready.back();  // failed or written in full
      p.ready.pop_back();
      continue;
    }
    Outgoing& candidate = it->second;
    if (best == nullptr || std::tie(candidate.shape.priority_class, candidate.order) <
                               std::tie(best->shape.priority_class, best->order)) {
      best = &candidate;
    }
    ++i;
  }
  return best;
}

bool LocalPath::write_chunk(Peer& p, Outgoing& message) {
  const local::Announce& shape = message.shape;
  const auto dtype = static_cast<WireDtype>(shape.wire);
  const std::size_t full_packet = wire::payload_bytes(dtype, shape.packet_floats);
  const std::size_t limit = std::min(kLocalChunkBytes, p.out.max_payload());
  const std::uint32_t left = shape.packets - message.next_packet;
  auto packets =
      static_cast<std::uint32_t>(std::clamp<std::size_t>(limit / (full_packet + 2), 1, left));
  std::span<std::byte> room;
  std::size_t payload = 0;
  for (;;) {
    payload = 0;
    for (std::uint32_t i = 0; i < packets; ++i) {
      payload += wire::payload_bytes(
          dtype,
          wire::packet_floats(shape.total_floats, shape.packet_floats, message.next_packet + i));
    }
    room = p.out.reserve(sizeof(local::DataChunk) + local::counts_bytes(packets) + payload);
    if (!room.empty()) break;
    if (packets == 1) return false;  // the ring is full: the receiver's wake-up brings us back
    packets /= 2;
  }
  local::put(room, local::DataChunk{message.receive_seq, message.next_packet, packets});
  std::size_t offset = sizeof(local::DataChunk);
  for (std::uint32_t i = 0; i < packets; ++i) {
    const std::uint32_t seq = message.next_packet + i;
    const std::uint16_t count =
        message.contributions.empty() ? message.contribution : message.contributions[seq];
    std::memcpy(room.data() + offset + 2 * std::size_t{i}, &count, sizeof(count));
  }
  offset += local::counts_bytes(packets);
  for (std::uint32_t i = 0; i < packets; ++i) {
    const std::uint32_t seq = message.next_packet + i;
    const std::uint32_t floats = wire::packet_floats(shape.total_floats, shape.packet_floats, seq);
    const std::size_t bytes = wire::payload_bytes(dtype, floats);
    wire::encode_values(message.values.subspan(std::size_t{seq} * shape.packet_floats, floats),
                        dtype, room.subspan(offset, bytes));
    offset += bytes;
  }
  p.out.commit(static_cast<std::uint32_t>(local::Kind::kData), offset);
  counts_.bytes_sent += payload;
  message.next_packet += packets;
  return true;
}

void LocalPath::fail_outgoing(Peer& p, std::uint64_t send_seq, ErrorCode code,
                              const std::string& why) {
  const auto it = p.outgoing.find(send_seq);
  if (it == p.outgoing.end()) return;
  const std::uint64_t token = it->second.token;
  p.sending_ids.erase(it->second.id);
  p.outgoing.erase(it);
  fail(token, true, code, p.rank, why);
}

}  // namespace dlcp::transport
