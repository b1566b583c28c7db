// Sending: packetization, the priority-ordered send queue, pacing, spraying, retransmission.
#include <algorithm>
#include <bit>

#include "policy/policy.hpp"
#include "transport/engine.hpp"
#include "wire/values.hpp"

namespace dlcp::transport {
namespace {

// Payload floats go to the kernel straight from the caller's buffer; the wire order is
// little-endian, so that is only valid on little-endian hosts.
static_assert(std::endian::native == std::endian::little,
              "dlcp's zero-copy send path assumes a little-endian host");

constexpr int kBurstsPerStep = 4;
constexpr Duration kSendBackoff = std::chrono::microseconds(50);
// UDP GSO limits: segments per send, and bytes per send (one IPv4 datagram's worth).
constexpr std::size_t kMaxGsoSegments = 64;
constexpr std::size_t kMaxGsoBytes = 65000;

}  // namespace

std::future<MessageResult> Engine::send(int peer, std::uint64_t message_id,
                                        std::span<const float> values,
                                        const MessageOptions& options) {
  try {
    options.validate();
  } catch (const std::invalid_argument& e) {
    throw Error(ErrorCode::kInvalidArgument, peer, e.what());
  }
  if (peer < 0 || peer >= options_.world_size || peer == options_.rank) {
    throw Error(ErrorCode::kInvalidArgument, peer, "send to invalid rank " + std::to_string(peer));
  }
  if (values.empty() || values.size() > 0xFFFFFFFFull) {
    throw Error(ErrorCode::kInvalidArgument, peer,
                "message size must be 1 .. 2^32-1 floats, got " + std::to_string(values.size()));
  }
  const std::uint16_t stride = peer_stride_[static_cast<std::size_t>(peer)].load();
  if (stride == 0) {
    throw Error(ErrorCode::kInvalidArgument, peer,
                "send to rank " + std::to_string(peer) + " before connect()");
  }
  // The path's stride counts float32 values; a 16-bit packet of the same size holds about twice.
  const std::uint16_t wire_stride = wire::packet_values(options.wire, stride);
  if (options.packet_floats > wire_stride) {
    throw Error(ErrorCode::kInvalidArgument, peer,
                "packet_floats " + std::to_string(options.packet_floats) + " exceeds the " +
                    std::to_string(wire_stride) + " " + to_string(options.wire) +
                    " values the path to rank " + std::to_string(peer) + " carries");
  }
  const std::uint16_t packet_floats =
      options.packet_floats != 0 ? options.packet_floats : wire_stride;
  const std::uint32_t packets =
      wire::packet_count(static_cast<std::uint32_t>(values.size()), packet_floats);
  if (!options.packet_contributions.empty()) {
    if (options.packet_contributions.size() != packets) {
      throw Error(ErrorCode::kInvalidArgument, peer,
                  "packet_contributions has " +
                      std::to_string(options.packet_contributions.size()) +
                      " counts for a message of " + std::to_string(packets) + " packets");
    }
    for (const auto count : options.packet_contributions) {
      if (count == 0 || count > options_.world_size) {
        throw Error(ErrorCode::kInvalidArgument, peer,
                    "packet_contributions must be 1.." + std::to_string(options_.world_size) +
                        ", got " + std::to_string(count));
      }
    }
  }
  auto message = std::make_unique<OutgoingMessage>();
  message->key = {peer, message_id};
  message->values = values;
  message->options = options;
  message->priority_class = policy::priority_class(options.layer, options.num_layers);
  message->protected_tos =
      policy::data_tos(options_.policy, message->priority_class, policy::Precedence::kProtected);
  message->drop_eligible_tos =
      policy::data_tos(options_.policy, message->priority_class, policy::Precedence::kDropEligible);
  message->shared_band =
      options_.rate.shared_band_pacing && shared_band_dscps_[message->protected_tos >> 2];
  message->budget_ppm = policy::budget_ppm(options.loss_budget);
  // A reliable message protects everything, in sequence order, without ranking.
  policy::PacketRanking ranking;
  if (message->budget_ppm != 0) {
    ranking = policy::rank_packets(values.data(), values.size(), packet_floats,
                                   options_.policy.protected_share);
  }
  message->sender.emplace(static_cast<std::uint32_t>(values.size()), packet_floats,
                          std::move(ranking));
  message->stats.packets = packets;
  message->stats.priority_class = static_cast<std::uint32_t>(message->priority_class);
  message->posted = SteadyClock::now();
  message->deadline = message->posted + options.deadline;
  auto future = message->promise.get_future();
  auto holder = std::make_shared<std::unique_ptr<OutgoingMessage>>(std::move(message));
  post([this, holder] { start_send(std::move(*holder), SteadyClock::now()); });
  return future;
}

void Engine::start_send(std::unique_ptr<OutgoingMessage> message, TimePoint /*now*/) {
  PeerState& peer = peers_[static_cast<std::size_t>(message->key.peer)];
  if (stopping_.load()) {
    message->promise.set_exception(std::make_exception_ptr(
        Error(ErrorCode::kAborted, peer.rank, "transport shut down before the message was sent")));
    return;
  }
  if (!aborted_.empty()) {
    message->promise.set_exception(std::make_exception_ptr(
        Error(ErrorCode::kAborted, peer.rank, "transport aborted: " + aborted_)));
    return;
  }
  if (!peer.connected) {
    message->promise.set_exception(std::make_exception_ptr(Error(
        ErrorCode::kPeerLost, peer.rank,
        peer.failure.empty() ? describe_peer(peer.rank) + " is not connected" : peer.failure)));
    return;
  }
  if (outgoing_.contains(message->key)) {
    message->promise.set_exception(
        std::make_exception_ptr(Error(ErrorCode::kInvalidArgument, peer.rank,
                                      "message " + std::to_string(message->key.id) + " to " +
                                          describe_peer(peer.rank) + " is already in flight")));
    return;
  }
  peer.control.send(message->sender->flow_start(
      message->key.id, static_cast<std::uint8_t>(message->priority_class), message->budget_ppm));
  timers_.schedule(message->deadline, {message->key, MessageTimer::Kind::kSendDeadline});
  message->order = send_queue_.next_order();
  OutgoingMessage& ref = *message;
  outgoing_.emplace(message->key, std::move(message));
  enqueue(ref);
}

void Engine::enqueue(OutgoingMessage& message) {
  send_queue_.push(&message, message.priority_class, message.order);
}

void Engine::dequeue(OutgoingMessage& message) {
  send_queue_.remove(&message, message.priority_class, message.order);
}

void Engine::send_step(TimePoint now) {
  if (now < send_blocked_until_) return;
  for (int burst = 0; burst < kBurstsPerStep && !send_queue_.empty(); ++burst) {
    OutgoingMessage* message = send_queue_.first([&](const OutgoingMessage& candidate) {
      const PeerState& peer = peers_[static_cast<std::size_t>(candidate.key.peer)];
      return pacing_budget(candidate, now) >= peer.datagram_bytes;
    });
    if (message == nullptr) return;
    const std::uint64_t sent_bytes = send_burst(*message, now);
    if (sent_bytes == 0) {
      // The kernel's buffers are full (EAGAIN/ENOBUFS): back off briefly instead of spinning,
      // which on a small machine would take the CPU the receiving side needs to drain them.
      send_blocked_until_ = now + kSendBackoff;
      return;
    }
  }
}

std::uint64_t Engine::pacing_budget(const OutgoingMessage& message, TimePoint now) {
  PeerState& peer = peers_[static_cast<std::size_t>(message.key.peer)];
  return peer.pacing->available(message.shared_band, now);
}

std::uint64_t Engine::send_burst(OutgoingMessage& message, TimePoint now) {
  PeerState& peer = peers_[static_cast<std::size_t>(message.key.peer)];
  const std::uint64_t budget =
      std::max<std::uint64_t>(pacing_budget(message, now), peer.datagram_bytes);
  const std::size_t batch = static_cast<std::size_t>(options_.batch);
  // Packets of one GSO send share a path and a TOS, and all but the last are full-sized.
  protocol::MessageSender& sender = *message.sender;
  const WireDtype dtype = message.options.wire;
  const std::size_t datagram_bytes =
      wire::kDataHeaderBytes + wire::payload_bytes(dtype, sender.stride()) + trailer_bytes_;
  const std::size_t max_segments =
      std::min<std::size_t>(kMaxGsoSegments, kMaxGsoBytes / datagram_bytes);

  // Take the burst's packets in round order, within the pacer's budget.
  burst_.clear();
  std::uint64_t bytes = 0;
  while (burst_.size() < batch && sender.has_next() && bytes + peer.datagram_bytes <= budget) {
    const std::uint32_t seq = sender.take_next();
    burst_.push_back(seq);
    bytes +=
        wire::kDataHeaderBytes + trailer_bytes_ + wire::payload_bytes(dtype, sender.floats_in(seq));
  }
  const bool round_done = !sender.has_next();
  const std::uint16_t round = sender.round();

  wire::DataHeader header;
  header.job_token = options_.job_token;
  header.src_rank = static_cast<std::uint16_t>(options_.rank);
  header.dst_rank = static_cast<std::uint16_t>(peer.rank);
  header.message_id = message.key.id;
  header.total_floats = static_cast<std::uint32_t>(message.values.size());
  header.stride_floats = sender.stride();
  header.contributions = message.options.contributions;
  header.priority_class = static_cast<std::uint8_t>(message.priority_class);
  header.round = static_cast<std::uint8_t>(std::min<std::uint16_t>(round, 255));
  header.wire = dtype;
  // float32 travels from the caller's buffer; 16-bit values are converted into the burst's slots.
  const std::size_t slot_bytes = wire::payload_bytes(dtype, sender.stride());
  if (dtype != WireDtype::kFloat32 && payload_scratch_.size() < burst_.size() * slot_bytes) {
    payload_scratch_.resize(burst_.size() * slot_bytes);
  }

  for (auto& list : per_socket_) list.clear();
  for (auto& list : per_socket_groups_) list.clear();
  for (std::size_t first = 0; first < burst_.size();) {
    const std::size_t path = peer.paths->next();
    const std::size_t socket = path % sockets_.size();
    const bool gso = max_segments > 1 && sockets_[socket].gso_enabled();
    std::uint8_t group_tos = 0;
    std::size_t end = first;
    for (; end < burst_.size(); ++end) {
      const std::uint32_t seq = burst_[end];
      const bool is_protected = sender.is_protected(seq);
      const std::uint8_t tos =
          sender.sends_protected(seq) ? message.protected_tos : message.drop_eligible_tos;
      if (end > first) {
        const bool previous_full = sender.floats_in(burst_[end - 1]) == sender.stride();
        if (!gso || end - first >= max_segments || tos != group_tos || !previous_full) break;
      }
      group_tos = tos;
      header.seq = seq;
      header.pair_seq = peer.pair_seq++;
      if (!message.options.packet_contributions.empty()) {
        header.contributions = message.options.packet_contributions[seq];
      }
      const std::uint32_t floats = header.expected_floats();
      header.payload_bytes = static_cast<std::uint16_t>(wire::payload_bytes(dtype, floats));
      header.flags = static_cast<std::uint8_t>(
          (is_protected ? wire::data_flags::kProtected : 0) |
          (round_done && end + 1 == burst_.size() ? wire::data_flags::kLastOfRound : 0) |
          (round > 0 ? wire::data_flags::kRetransmission : 0) |
          (peer.mac_send ? wire::data_flags::kAuthenticated : 0));
      const std::span<std::byte> slot(&header_scratch_[end * wire::kDataHeaderBytes],
                                      wire::kDataHeaderBytes);
      wire::encode_data_header(header, slot);
      const auto values = message.values.subspan(header.offset_floats(), floats);
      std::span<const std::byte> payload = std::as_bytes(values);
      if (dtype != WireDtype::kFloat32) {
        const std::span<std::byte> converted(&payload_scratch_[end * slot_bytes],
                                             header.payload_bytes);
        wire::encode_values(values, dtype, converted);
        payload = converted;
      }
      iovec* iov = &iov_scratch_[iov_per_packet_ * end];
      iov[0] = {slot.data(), slot.size()};
      iov[1] = {const_cast<std::byte*>(payload.data()), payload.size()};
      if (peer.mac_send) {
        const std::span<std::byte> trailer(&trailer_scratch_[end * wire::kMacTrailerBytes],
                                           wire::kMacTrailerBytes);
        const std::uint64_t counter = peer.mac_counter++;
        wire::encode_mac_trailer({counter, peer.mac_send->compute(counter, slot, payload)},
                                 trailer);
        iov[2] = {trailer.data(), trailer.size()};
      }
    }
    const std::size_t count = end - first;
    per_socket_[socket].push_back(
        {&peer.data_addresses[path],
         std::span<const iovec>(&iov_scratch_[iov_per_packet_ * first], iov_per_packet_ * count),
         static_cast<std::uint16_t>(count > 1 ? datagram_bytes : 0), group_tos});
    per_socket_groups_[socket].push_back({first, count, path});
    first = end;
  }

  std::uint64_t sent_bytes = 0;
  for (std::size_t socket = 0; socket < sockets_.size(); ++socket) {
    auto& list = per_socket_[socket];
    if (list.empty()) continue;
    const std::size_t sent = sockets_[socket].send_batch(list);
    for (std::size_t i = 0; i < list.size(); ++i) {
      const auto [first, count, path] = per_socket_groups_[socket][i];
      for (std::size_t k = first; k < first + count; ++k) {
        if (i < sent) {
          for (std::size_t part = 0; part < iov_per_packet_; ++part) {
            sent_bytes += iov_scratch_[iov_per_packet_ * k + part].iov_len;
          }
        } else {
          // Refused by the kernel (full buffer, or GSO unavailable): again later this round. Its
          // pair_seq is spent, so the receiver counts it lost: this sender outran its own NIC.
          sender.give_back(burst_[k]);
        }
      }
      if (i < sent) {
        // Only what the kernel took counts towards the path's loss estimate.
        peer.path_sent[path] += count;
        message.stats.packets_sent += count;
        if (round > 0) message.stats.packets_retransmitted += count;
        stats_.datagrams_sent += count;
        if (round > 0) stats_.datagrams_retransmitted += count;
      }
    }
  }
  stats_.bytes_sent += sent_bytes;
  if (round > 0) stats_.bytes_retransmitted += sent_bytes;
  peer.pacing->consume(sent_bytes, message.shared_band, now);
  if (!sender.has_next()) {
    dequeue(message);
    peer.control.send(wire::RoundFinished{message.key.id, round,
                                          static_cast<std::uint32_t>(sender.round_size())});
  }
  return sent_bytes;
}

void Engine::on_missing_ranges(PeerState& peer, const wire::MissingRanges& missing) {
  auto it = outgoing_.find({peer.rank, missing.message_id});
  if (it == outgoing_.end()) return;  // already settled; a late report
  OutgoingMessage& message = *it->second;
  switch (message.sender->on_missing_ranges(missing.round, missing.ranges)) {
    case protocol::MessageSender::ReportEffect::kInvalid:
      rejects_.add(wire::RejectReason::kBadControlField);
      return;
    case protocol::MessageSender::ReportEffect::kIgnored:
      return;
    case protocol::MessageSender::ReportEffect::kNewRound:
      message.stats.rounds = message.sender->round();
      enqueue(message);
      return;
  }
}

void Engine::on_stop(PeerState& peer, const wire::Stop& stop, TimePoint now) {
  auto it = outgoing_.find({peer.rank, stop.message_id});
  if (it == outgoing_.end()) return;
  OutgoingMessage& message = *it->second;
  if (stop.reason == wire::StopReason::kDeadline || stop.reason == wire::StopReason::kAborted) {
    fail_outgoing(
        message, ErrorCode::kAborted,
        describe_peer(peer.rank) + " gave up receiving message " + std::to_string(stop.message_id) +
            (stop.reason == wire::StopReason::kDeadline ? " at its deadline" : " (aborted)"));
    return;
  }
  dequeue(message);
  MessageResult result;
  result.peer = peer.rank;
  result.message_id = stop.message_id;
  result.stats = message.stats;
  result.stats.packets_received = stop.packets_received;
  result.stats.packets_missing = stop.packets_missing;
  result.stats.completion = stop.reason == wire::StopReason::kComplete ? Completion::kComplete
                                                                       : Completion::kBoundReached;
  result.stats.seconds = to_seconds(now - message.posted);
  message.promise.set_value(std::move(result));
  outgoing_.erase(it);
}

void Engine::on_rate_feedback(PeerState& peer, const wire::RateFeedback& feedback, TimePoint now) {
  protocol::RateReport report;
  report.feedback.interval = std::chrono::microseconds(feedback.interval_us);
  report.feedback.received_bytes = feedback.received_bytes;
  report.feedback.received_packets = feedback.received_packets;
  report.feedback.lost_packets = feedback.lost_packets_estimate;
  report.feedback.ce_marked = feedback.ce_marked_packets;
  report.shared_band_marks = feedback.ce_marked_shared_band;
  report.offered_rate = static_cast<double>(feedback.offered_rate);
  peer.pacing->on_report(report, now);
  if (feedback.path_received.size() == peer.path_sent.size()) {
    std::vector<std::uint64_t> received(feedback.path_received.begin(),
                                        feedback.path_received.end());
    peer.paths->on_path_report(peer.path_sent, received);
  }
  std::fill(peer.path_sent.begin(), peer.path_sent.end(), 0);
}

void Engine::fail_outgoing(OutgoingMessage& message, ErrorCode code, const std::string& why) {
  dequeue(message);
  const MessageKey key = message.key;
  message.promise.set_exception(std::make_exception_ptr(Error(code, key.peer, why)));
  outgoing_.erase(key);
}

}  // namespace dlcp::transport
