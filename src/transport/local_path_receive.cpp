// The local path's reading side: the peer's records, placing its data, settling receives.
#include <algorithm>

#include "transport/local_path.hpp"
#include "wire/data_header.hpp"
#include "wire/values.hpp"

namespace dlcp::transport {
namespace {

// Announced messages a receiver keeps before their receives are posted: they hold no data, so
// only a broken peer could need more.
constexpr std::size_t kMaxAnnounced = 1 << 16;

bool valid_wire(std::uint8_t wire) {
  return wire <= static_cast<std::uint8_t>(WireDtype::kFloat16);
}

}  // namespace

void LocalPath::read_records(Peer& p, TimePoint now) {
  while (p.link && !p.failure) {
    const auto record = p.in.peek();
    if (!record) return;
    const std::span<const std::byte> body = record->payload;
    switch (static_cast<local::Kind>(record->kind)) {
      case local::Kind::kAnnounce: {
        const auto announce = local::get<local::Announce>(body);
        if (!announce)
          throw RingCorrupt("an Announce record of " + std::to_string(body.size()) + " bytes");
        on_announce(p, *announce, now);
        break;
      }
      case local::Kind::kReady: {
        const auto ready = local::get<local::Ready>(body);
        if (!ready)
          throw RingCorrupt("a Ready record of " + std::to_string(body.size()) + " bytes");
        on_ready(p, *ready);
        break;
      }
      case local::Kind::kData:
        on_data(p, body, now);
        break;
      case local::Kind::kSettled: {
        const auto settled = local::get<local::Settled>(body);
        if (!settled)
          throw RingCorrupt("a Settled record of " + std::to_string(body.size()) + " bytes");
        on_settled(p, *settled, now);
        break;
      }
      case local::Kind::kRefused:
        on_refused(p, body);
        break;
      default:
        throw RingCorrupt("a record of unknown kind " + std::to_string(record->kind));
    }
    if (p.link) p.in.release();
  }
}

void LocalPath::on_announce(Peer& p, const local::Announce& announce, TimePoint now) {
  if (announce.packet_floats == 0 || !valid_wire(announce.wire) ||
      announce.packets != wire::packet_count(announce.total_floats, announce.packet_floats) ||
      announce.priority_class >= kPriorityClasses) {
    throw RingCorrupt("an Announce of an impossible shape");
  }
  const auto it = p.incoming.find(announce.message_id);
  if (it == p.incoming.end() || it->second.shape) {
    // Not posted yet (or the posted one is busy with an earlier send): kept without data. A
    // later announcement of the same id replaces one whose send has failed meanwhile.
    if (p.announced.size() >= kMaxAnnounced && !p.announced.contains(announce.message_id)) {
      throw RingCorrupt("more than " + std::to_string(kMaxAnnounced) +
                        " messages announced and not received");
    }
    p.announced[announce.message_id] = {announce, now};
    return;
  }
  accept_announce(p, it->second, announce, now, now);
}

void LocalPath::accept_announce(Peer& p, Incoming& message, const local::Announce& announce,
                                TimePoint seen, TimePoint now) {
  const auto& counts = message.contributions;
  if (announce.total_floats != message.values.size() ||
      (!counts.empty() && counts.size() != announce.packets)) {
    const std::string why =
        p.description + " sends " + std::to_string(announce.total_floats) + " floats in " +
        std::to_string(announce.packets) + " packets as message " + std::to_string(message.id) +
        " but " + std::to_string(message.values.size()) + " floats" +
        (counts.empty() ? std::string() : " in " + std::to_string(counts.size()) + " packets") +
        " were posted";
    refuse(p, announce.send_seq, ErrorCode::kProtocol, why);
    fail_incoming(p, message.id, ErrorCode::kProtocol, why);
    return;
  }
  message.shape = announce;
  message.receive_seq = p.next_receive_seq++;
  message.first_sign = std::max(seen, message.posted);
  p.receiving.emplace(message.receive_seq, message.id);
  queue(p, local::Kind::kReady, local::Ready{announce.send_seq, message.receive_seq});
  if (announce.packets == 0) settle(p, message, now);
}

void LocalPath::on_data(Peer& p, std::span<const std::byte> record, TimePoint now) {
  const auto chunk = local::get<local::DataChunk>(record, false);
  if (!chunk) throw RingCorrupt("a Data record of " + std::to_string(record.size()) + " bytes");
  const auto seq_it = p.receiving.find(chunk->receive_seq);
  // A chunk of a receive that failed meanwhile: nothing of it is placed.
  if (seq_it == p.receiving.end()) return;
  Incoming& message = p.incoming.at(seq_it->second);
  const local::Announce& shape = *message.shape;
  if (chunk->first_packet != message.packets_received || chunk->packets == 0 ||
      chunk->packets > shape.packets - message.packets_received) {
    throw RingCorrupt("a Data record of packets " + std::to_string(chunk->first_packet) + "+" +
                      std::to_string(chunk->packets) + " where packet " +
                      std::to_string(message.packets_received) + " of " +
                      std::to_string(shape.packets) + " was due");
  }
  const auto dtype = static_cast<WireDtype>(shape.wire);
  std::size_t offset = sizeof(local::DataChunk) + local::counts_bytes(chunk->packets);
  std::size_t payload_total = 0;
  for (std::uint32_t i = 0; i < chunk->packets; ++i) {
    const std::uint32_t floats =
        wire::packet_floats(shape.total_floats, shape.packet_floats, chunk->first_packet + i);
    payload_total += wire::payload_bytes(dtype, floats);
  }
  if (record.size() != offset + payload_total) {
    throw RingCorrupt("a Data record of " + std::to_string(record.size()) + " bytes, not " +
                      std::to_string(offset + payload_total));
  }
  const std::size_t counts_at = sizeof(local::DataChunk);
  for (std::uint32_t i = 0; i < chunk->packets; ++i) {
    const std::uint32_t seq = chunk->first_packet + i;
    const std::uint32_t floats = wire::packet_floats(shape.total_floats, shape.packet_floats, seq);
    const std::size_t bytes = wire::payload_bytes(dtype, floats);
    const std::size_t first = std::size_t{seq} * shape.packet_floats;
    wire::decode_values(record.subspan(offset, bytes), dtype,
                        message.values.subspan(first, floats));
    if (!message.contributions.empty()) {
      std::uint16_t count = 0;
      std::memcpy(&count, record.data() + counts_at + 2 * std::size_t{i}, sizeof(count));
      message.contributions[seq] = count;
    }
    offset += bytes;
  }
  counts_.bytes_received += payload_total;
  message.packets_received += chunk->packets;
  if (message.packets_received == shape.packets) settle(p, message, now);
}

void LocalPath::settle(Peer& p, Incoming& message, TimePoint now) {
  const local::Announce& shape = *message.shape;
  queue(p, local::Kind::kSettled, local::Settled{shape.send_seq});
  MessageResult result;
  result.peer = p.rank;
  result.message_id = message.id;
  MessageStats& stats = result.stats;
  stats.packets = shape.packets;
  stats.packets_received = shape.packets;
  stats.priority_class = shape.priority_class;
  stats.completion = Completion::kComplete;
  stats.seconds = to_seconds(now - message.posted);
  stats.first_round_seconds = to_seconds(now - message.first_sign);
  ++counts_.messages_received;
  counts_.first_round_time.add(stats.first_round_seconds);
  counts_.recovery_time.add(0);
  const std::uint64_t token = message.token;
  p.receiving.erase(message.receive_seq);
  p.incoming.erase(message.id);
  complete(token, false, std::move(result));
}

void LocalPath::on_ready(Peer& p, const local::Ready& ready) {
  const auto it = p.outgoing.find(ready.send_seq);
  // Failed meanwhile (deadline): the receiver waits for its own deadline, as over UDP.
  if (it == p.outgoing.end()) return;
  if (it->second.receive_seq != 0 || ready.receive_seq == 0) {
    throw RingCorrupt("a second Ready for one send");
  }
  it->second.receive_seq = ready.receive_seq;
  p.ready.push_back(ready.send_seq);
}

void LocalPath::on_settled(Peer& p, const local::Settled& settled, TimePoint now) {
  const auto it = p.outgoing.find(settled.send_seq);
  if (it == p.outgoing.end()) return;
  Outgoing& message = it->second;
  if (message.receive_seq == 0 || message.next_packet != message.shape.packets) {
    throw RingCorrupt("a Settled record for a message not sent in full");
  }
  MessageResult result;
  result.peer = p.rank;
  result.message_id = message.id;
  MessageStats& stats = result.stats;
  stats.packets = message.shape.packets;
  stats.packets_sent = message.shape.packets;
  stats.priority_class = message.shape.priority_class;
  stats.completion = Completion::kComplete;
  stats.seconds = to_seconds(now - message.posted);
  ++counts_.messages_sent;
  const std::uint64_t token = message.token;
  p.sending_ids.erase(message.id);
  p.outgoing.erase(it);
  complete(token, true, std::move(result));
}

void LocalPath::on_refused(Peer& p, std::span<const std::byte> record) {
  const auto refused = local::get<local::Refused>(record, false);
  if (!refused || refused->reason_bytes > local::kMaxReasonBytes ||
      record.size() != sizeof(local::Refused) + refused->reason_bytes ||
      refused->code > static_cast<std::uint32_t>(ErrorCode::kProtocol)) {
    throw RingCorrupt("a malformed Refused record");
  }
  const std::string reason(reinterpret_cast<const char*>(record.data() + sizeof(local::Refused)),
                           refused->reason_bytes);
  fail_outgoing(p, refused->send_seq, static_cast<ErrorCode>(refused->code), reason);
}

void LocalPath::fail_incoming(Peer& p, std::uint64_t id, ErrorCode code, const std::string& why) {
  const auto it = p.incoming.find(id);
  if (it == p.incoming.end()) return;
  Incoming& message = it->second;
  // A receiver that gives up tells the sender at once, as the UDP path's Stop does.
  if (message.shape && code == ErrorCode::kDeadline && p.link && !p.failure) {
    refuse(p, message.shape->send_seq, ErrorCode::kDeadline, "the receiver gave up: " + why);
  }
  if (message.receive_seq != 0) p.receiving.erase(message.receive_seq);
  const std::uint64_t token = message.token;
  p.incoming.erase(it);
  fail(token, false, code, p.rank, why);
}

}  // namespace dlcp::transport
