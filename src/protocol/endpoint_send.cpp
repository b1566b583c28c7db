// The endpoint's sending side: posting, the priority-ordered send queue, pacing, spraying,
// rounds and retransmission, and the receivers' rate reports.
#include <algorithm>

#include "policy/policy.hpp"
#include "protocol/endpoint.hpp"
#include "protocol/endpoint_state.hpp"
#include "wire/values.hpp"

namespace dlcp::protocol {

void check_request(int peer, int rank, int world_size, std::size_t floats,
                   const MessageOptions& options) {
  options.validate();
  if (peer < 0 || peer >= world_size || peer == rank) {
    throw Error(ErrorCode::kInvalidArgument, peer,
                "invalid peer rank " + std::to_string(peer) + " (another rank of 0.." +
                    std::to_string(world_size - 1) + " expected)");
  }
  if (floats == 0 || floats > 0xFFFFFFFFull) {
    throw Error(ErrorCode::kInvalidArgument, peer,
                "message size must be 1 .. 2^32-1 floats, got " + std::to_string(floats));
  }
}

void check_send(const SendRequest& request, int world_size, std::uint16_t path_stride) {
  const int peer = request.key.peer;
  const MessageOptions& options = request.options;
  if (path_stride == 0) {
    throw Error(ErrorCode::kInvalidArgument, peer,
                "send to rank " + std::to_string(peer) + " before connect()");
  }
  // The path's stride counts float32 values; a 16-bit packet of the same size holds about twice.
  const std::uint16_t wire_stride = wire::packet_values(options.wire, path_stride);
  if (options.packet_floats > wire_stride) {
    throw Error(ErrorCode::kInvalidArgument, peer,
                "packet_floats " + std::to_string(options.packet_floats) + " exceeds the " +
                    std::to_string(wire_stride) + " " + to_string(options.wire) +
                    " values the path to rank " + std::to_string(peer) + " carries");
  }
  const std::uint16_t floats = options.packet_floats != 0 ? options.packet_floats : wire_stride;
  const std::uint32_t packets = wire::packet_count(request.total_floats, floats);
  if (!request.contributions.empty()) {
    if (request.contributions.size() != packets) {
      throw Error(ErrorCode::kInvalidArgument, peer,
                  "contributions has " + std::to_string(request.contributions.size()) +
                      " counts for a message of " + std::to_string(packets) + " packets");
    }
    for (const auto count : request.contributions) {
      if (count == 0 || count > world_size) {
        throw Error(ErrorCode::kInvalidArgument, peer,
                    "contributions must be 1.." + std::to_string(world_size) + ", got " +
                        std::to_string(count));
      }
    }
  }
  if (request.protected_flags && request.protected_flags->size() != packets) {
    throw Error(ErrorCode::kInvalidArgument, peer,
                "protected_flags has " + std::to_string(request.protected_flags->size()) +
                    " flags for a message of " + std::to_string(packets) + " packets");
  }
}

std::uint16_t Endpoint::packet_floats(int rank, const MessageOptions& options) const {
  if (options.packet_floats != 0) return options.packet_floats;
  return wire::packet_values(options.wire, peer(rank).link.stride);
}

void Endpoint::post_send(SendRequest request, TimePoint now) {
  const MessageKey key = request.key;
  if (auto refused = refusal(true)) {
    return fail(request.token, true, ErrorCode::kAborted, key.peer, *refused);
  }
  const Peer& p = peer(key.peer);
  if (!p.connected) {
    return fail(request.token, true, ErrorCode::kPeerLost, key.peer,
                p.failure.empty() ? describe_peer(key.peer) + " is not connected" : p.failure);
  }
  if (outgoing_.contains(key)) {
    return fail(request.token, true, ErrorCode::kInvalidArgument, key.peer,
                "message " + std::to_string(key.id) + " to " + describe_peer(key.peer) +
                    " is already in flight");
  }
  auto message = std::make_unique<Outgoing>();
  message->key = key;
  message->token = request.token;
  message->values = request.values;
  message->total_floats = request.total_floats;
  message->options = request.options;
  message->contributions = request.contributions;
  const MessageOptions& options = message->options;
  message->priority_class = policy::priority_class(options.layer, options.num_layers);
  message->protected_tos =
      policy::data_tos(options_.policy, message->priority_class, policy::Precedence::kProtected);
  message->drop_eligible_tos =
      policy::data_tos(options_.policy, message->priority_class, policy::Precedence::kDropEligible);
  if (!options_.drop_precedence) message->drop_eligible_tos = message->protected_tos;
  if (!options_.ecn_capable) {
    constexpr std::uint8_t kEcnBits = 0b11;
    message->protected_tos = static_cast<std::uint8_t>(message->protected_tos & ~kEcnBits);
    message->drop_eligible_tos = static_cast<std::uint8_t>(message->drop_eligible_tos & ~kEcnBits);
  }
  message->shared_band =
      options_.rate.shared_band_pacing && options_.shared_band_dscps[message->protected_tos >> 2];
  message->budget_ppm = policy::budget_ppm(options.loss_budget);
  const std::uint16_t floats = packet_floats(key.peer, options);
  // A reliable message protects everything, in sequence order, without ranking.
  policy::PacketRanking ranking;
  if (message->budget_ppm != 0) {
    if (request.protected_flags) {
      ranking.send_order = policy::first_round_order(*request.protected_flags);
      ranking.protected_flags = std::move(*request.protected_flags);
    } else {
      ranking = policy::rank_packets(request.values.data(), request.values.size(), floats,
                                     options_.policy.protected_share);
    }
  }
  // Per-packet contribution counts would have to travel with a rebuilt packet; the header's
  // count of a parity packet cannot carry them, so such messages go without parity.
  const std::uint8_t parity = request.contributions.empty() ? options_.parity_members : 0;
  message->sender.emplace(request.total_floats, floats, std::move(ranking), parity);
  message->stats.packets = message->sender->packet_count();
  message->stats.priority_class = static_cast<std::uint32_t>(message->priority_class);
  message->posted = now;
  message->deadline = now + options.deadline;
  send_control(key.peer, message->sender->flow_start(
                             key.id, static_cast<std::uint8_t>(message->priority_class),
                             message->budget_ppm));
  timers_.schedule(message->deadline, {key, Timer::Kind::kSendDeadline});
  message->order = send_queue_.next_order();
  Outgoing& ref = *message;
  outgoing_.emplace(key, std::move(message));
  enqueue(ref);
}

void Endpoint::enqueue(Outgoing& message) {
  send_queue_.push(&message, message.priority_class, message.order);
}

void Endpoint::dequeue(Outgoing& message) {
  send_queue_.remove(&message, message.priority_class, message.order);
}

std::uint64_t Endpoint::pacing_budget(const Outgoing& message, TimePoint now) {
  return peer(message.key.peer).pacing->available(message.shared_band, now);
}

std::optional<TimePoint> Endpoint::next_send(TimePoint now) {
  std::optional<TimePoint> next;
  send_queue_.visit([&](const Outgoing& message) {
    const Duration wait = peer(message.key.peer).pacing->wait(message.shared_band, now);
    if (!next || now + wait < *next) next = now + wait;
    return wait > Duration::zero();
  });
  return next;
}

bool Endpoint::next_burst(TimePoint now, Burst& burst) {
  Outgoing* chosen = send_queue_.first([&](const Outgoing& candidate) {
    const Peer& p = peer(candidate.key.peer);
    return pacing_budget(candidate, now) >=
           p.link.datagram_bytes + options_.datagram_overhead_bytes;
  });
  burst.packets.clear();
  burst.runs.clear();
  burst.run_sent.clear();
  if (chosen == nullptr) return false;
  Outgoing& message = *chosen;
  Peer& p = peer(message.key.peer);
  const std::size_t overhead = options_.trailer_bytes + options_.datagram_overhead_bytes;
  const std::uint64_t budget = std::max<std::uint64_t>(
      pacing_budget(message, now), p.link.datagram_bytes + options_.datagram_overhead_bytes);
  MessageSender& sender = *message.sender;
  const WireDtype dtype = message.options.wire;
  const std::size_t datagram_bytes =
      wire::kDataHeaderBytes + wire::payload_bytes(dtype, sender.stride()) + options_.trailer_bytes;
  const std::size_t max_run = std::max<std::size_t>(
      1, std::min(options_.max_run_packets, options_.max_run_bytes / datagram_bytes));
  burst.peer = message.key.peer;
  burst.datagram_bytes = datagram_bytes;

  // The burst's packets in round order, within the pacer's budget.
  std::uint64_t bytes = 0;
  std::vector<std::uint32_t>& seqs = burst_seqs_;
  seqs.clear();
  while (seqs.size() < options_.burst_packets && sender.has_next() &&
         bytes + p.link.datagram_bytes + options_.datagram_overhead_bytes <= budget) {
    const std::uint32_t seq = sender.take_next();
    seqs.push_back(seq);
    bytes += wire::kDataHeaderBytes + overhead + wire::payload_bytes(dtype, sender.floats_in(seq));
  }
  const bool round_done = !sender.has_next();
  const std::uint16_t round = sender.round();

  wire::DataHeader header;
  header.job_token = options_.job_token;
  header.src_rank = static_cast<std::uint16_t>(options_.rank);
  header.dst_rank = static_cast<std::uint16_t>(p.rank);
  header.message_id = message.key.id;
  header.total_floats = message.total_floats;
  header.stride_floats = sender.stride();
  header.contributions = message.options.contributions;
  header.priority_class = static_cast<std::uint8_t>(message.priority_class);
  header.round = static_cast<std::uint8_t>(std::min<std::uint16_t>(round, 255));
  header.wire = dtype;
  for (std::size_t first = 0; first < seqs.size();) {
    const std::size_t path = p.paths->next();
    std::uint8_t run_tos = 0;
    std::size_t end = first;
    for (; end < seqs.size(); ++end) {
      const std::uint32_t seq = seqs[end];
      const std::uint8_t tos =
          sender.sends_protected(seq) ? message.protected_tos : message.drop_eligible_tos;
      if (end > first) {
        const bool previous_full = sender.floats_in(seqs[end - 1]) == sender.stride();
        if (end - first >= max_run || tos != run_tos || !previous_full) break;
      }
      run_tos = tos;
      header.seq = seq;
      header.pair_seq = p.pair_seq++;
      const bool parity = sender.is_parity(seq);
      if (!message.contributions.empty()) header.contributions = message.contributions[seq];
      header.flags = parity ? wire::data_flags::kParity : 0;
      const std::uint32_t floats = header.expected_floats();
      header.payload_bytes = static_cast<std::uint16_t>(wire::payload_bytes(dtype, floats));
      header.flags = static_cast<std::uint8_t>(
          header.flags | (sender.is_protected(seq) ? wire::data_flags::kProtected : 0) |
          (round_done && end + 1 == seqs.size() ? wire::data_flags::kLastOfRound : 0) |
          (round > 0 ? wire::data_flags::kRetransmission : 0) |
          (options_.trailer_bytes > 0 ? wire::data_flags::kAuthenticated : 0));
      std::span<const float> values;
      std::span<const std::byte> payload;
      if (parity) {
        payload = parity_payload(message, seq - sender.packet_count());
      } else if (!message.values.empty()) {
        values = message.values.subspan(header.offset_floats(), floats);
      }
      burst.packets.push_back({header, values, payload, tos});
    }
    burst.runs.push_back({first, end - first, path});
    first = end;
  }
  return true;
}

void Endpoint::burst_sent(const Burst& burst, TimePoint now) {
  if (burst.packets.empty()) return;
  const MessageKey key{burst.peer, burst.packets.front().header.message_id};
  const auto it = outgoing_.find(key);
  if (it == outgoing_.end()) return;
  Outgoing& message = *it->second;
  Peer& p = peer(burst.peer);
  MessageSender& sender = *message.sender;
  const std::uint16_t round = sender.round();
  std::uint64_t sent_bytes = 0;
  std::uint64_t sent_datagrams = 0;
  for (std::size_t r = 0; r < burst.runs.size(); ++r) {
    const Burst::Run& run = burst.runs[r];
    const bool sent = r < burst.run_sent.size() && burst.run_sent[r] != 0;
    for (std::size_t k = run.first; k < run.first + run.count; ++k) {
      const wire::DataHeader& header = burst.packets[k].header;
      if (sent) {
        sent_bytes += wire::kDataHeaderBytes + header.payload_bytes + options_.trailer_bytes;
      } else {
        // Refused (full buffer, or GSO unavailable): again later this round. Its pair_seq is
        // spent, so the receiver counts it lost: this sender outran its own NIC.
        sender.give_back(header.seq);
      }
    }
    if (!sent) continue;
    // Only what the network took counts towards the path's loss estimate.
    sent_datagrams += run.count;
    p.path_sent[run.path] += run.count;
    message.stats.packets_sent += run.count;
    counters_.datagrams_sent += run.count;
    // Only a round 0 with parity holds parity packets: no pass over the others' runs.
    if (round == 0 && sender.parity() != nullptr) {
      for (std::size_t k = run.first; k < run.first + run.count; ++k) {
        if (burst.packets[k].header.is_parity()) ++counters_.parity_sent;
      }
    }
    if (round > 0) {
      message.stats.packets_retransmitted += run.count;
      counters_.datagrams_retransmitted += run.count;
    }
  }
  counters_.bytes_sent += sent_bytes;
  if (round > 0) counters_.bytes_retransmitted += sent_bytes;
  p.pacing->consume(sent_bytes + sent_datagrams * options_.datagram_overhead_bytes,
                    message.shared_band, now);
  if (!sender.has_next()) {
    dequeue(message);
    send_control(burst.peer, wire::RoundFinished{key.id, round,
                                                 static_cast<std::uint32_t>(sender.round_size())});
  }
}

void Endpoint::on_missing_ranges(int rank, const wire::MissingRanges& missing) {
  auto it = outgoing_.find({rank, missing.message_id});
  if (it == outgoing_.end()) return;  // already settled; a late report
  Outgoing& message = *it->second;
  switch (message.sender->on_missing_ranges(missing.round, missing.ranges)) {
    case MessageSender::ReportEffect::kInvalid:
      rejects_.add(wire::RejectReason::kBadControlField);
      return;
    case MessageSender::ReportEffect::kIgnored:
      return;
    case MessageSender::ReportEffect::kNewRound:
      message.stats.rounds = message.sender->round();
      enqueue(message);
      return;
  }
}

void Endpoint::on_stop(int rank, const wire::Stop& stop, TimePoint now) {
  auto it = outgoing_.find({rank, stop.message_id});
  if (it == outgoing_.end()) return;
  Outgoing& message = *it->second;
  if (stop.reason == wire::StopReason::kDeadline || stop.reason == wire::StopReason::kAborted) {
    fail_outgoing(
        message, ErrorCode::kAborted,
        describe_peer(rank) + " gave up receiving message " + std::to_string(stop.message_id) +
            (stop.reason == wire::StopReason::kDeadline ? " at its deadline" : " (aborted)"));
    return;
  }
  dequeue(message);
  MessageResult result;
  result.peer = rank;
  result.message_id = stop.message_id;
  result.stats = message.stats;
  result.stats.packets_received = stop.packets_received;
  result.stats.packets_missing = stop.packets_missing;
  result.stats.completion = stop.reason == wire::StopReason::kComplete ? Completion::kComplete
                                                                       : Completion::kBoundReached;
  result.stats.seconds = to_seconds(now - message.posted);
  complete(message.token, true, std::move(result));
  outgoing_.erase(it);
}

void Endpoint::on_rate_feedback(int rank, const wire::RateFeedback& feedback, TimePoint now) {
  Peer& p = peer(rank);
  RateReport report;
  report.feedback.interval = std::chrono::microseconds(feedback.interval_us);
  report.feedback.received_bytes = feedback.received_bytes;
  report.feedback.received_packets = feedback.received_packets;
  report.feedback.lost_packets = feedback.lost_packets_estimate;
  report.feedback.ce_marked = feedback.ce_marked_packets;
  report.shared_band_marks = feedback.ce_marked_shared_band;
  report.offered_rate = static_cast<double>(feedback.offered_rate);
  p.pacing->on_report(report, now);
  if (feedback.path_received.size() == p.path_sent.size()) {
    std::vector<std::uint64_t> received(feedback.path_received.begin(),
                                        feedback.path_received.end());
    p.paths->on_path_report(p.path_sent, received);
  }
  std::fill(p.path_sent.begin(), p.path_sent.end(), 0);
}

void Endpoint::fail_outgoing(Outgoing& message, ErrorCode code, const std::string& why) {
  dequeue(message);
  const MessageKey key = message.key;
  fail(message.token, true, code, key.peer, why);
  outgoing_.erase(key);
}

}  // namespace dlcp::protocol
