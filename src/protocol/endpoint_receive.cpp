// The endpoint's receiving side: posting, placement, each message's MessageReceiver deciding
// settlement and reports, budget groups, and the early-arrival backlog for receives not posted.
#include <algorithm>

#include "policy/policy.hpp"
#include "protocol/endpoint.hpp"
#include "protocol/endpoint_state.hpp"
#include "wire/values.hpp"

namespace dlcp::protocol {

void Endpoint::post_receive(ReceiveRequest request, TimePoint now) {
  const MessageKey key = request.key;
  if (auto refused = refusal(false)) {
    return fail(request.token, false, ErrorCode::kAborted, key.peer, *refused);
  }
  const Peer& p = peer(key.peer);
  if (!p.failure.empty()) {
    return fail(request.token, false, ErrorCode::kPeerLost, key.peer, p.failure);
  }
  if (incoming_.contains(key)) {
    return fail(request.token, false, ErrorCode::kInvalidArgument, key.peer,
                "a receive of message " + std::to_string(key.id) + " from " +
                    describe_peer(key.peer) + " is already posted");
  }
  if (const std::uint64_t id = request.options.budget_group; id != 0) {
    const std::string refused =
        groups_.join(id, request.options.budget_group_size, key, request.total_floats);
    if (!refused.empty()) {
      return fail(request.token, false, ErrorCode::kInvalidArgument, key.peer, refused);
    }
  }
  auto message = std::make_unique<Incoming>();
  message->key = key;
  message->token = request.token;
  message->values = request.values;
  message->total_floats = request.total_floats;
  message->options = request.options;
  message->contributions = request.contributions;
  std::fill(message->contributions.begin(), message->contributions.end(), std::uint16_t{0});
  message->posted = now;
  message->deadline = now + request.options.deadline;
  message->receiver.emplace(request.total_floats, policy::budget_ppm(request.options.loss_budget),
                            now);
  // A reposted id starts a new transfer: forget that it was settled before.
  settled_.forget(key);
  Incoming& ref = *message;
  incoming_.emplace(key, std::move(message));
  timers_.schedule(ref.deadline, {key, Timer::Kind::kReceiveDeadline});
  replay_early(ref, now);
}

std::optional<std::string> Endpoint::join_group_lossless(const MessageKey& key,
                                                         const MessageOptions& options,
                                                         std::uint32_t total_floats,
                                                         TimePoint now) {
  const std::uint64_t id = options.budget_group;
  if (id == 0) return std::nullopt;
  if (std::string refused = groups_.join(id, options.budget_group_size, key, total_floats);
      !refused.empty()) {
    return refused;
  }
  // It will arrive whole, so its budget is all slack for the others, as a UDP member's that
  // arrived whole (the receiver's budget applies: both ends of one collective post the same).
  groups_.on_received(id, total_floats);
  groups_.on_allowed(
      id, 0,
      policy::allowed_missing_entries(total_floats, policy::budget_ppm(options.loss_budget)));
  groups_.leave(id, key);
  settle_group(id, now);
  return std::nullopt;
}

void Endpoint::replay_early(Incoming& message, TimePoint now) {
  const MessageKey key = message.key;
  std::optional<EarlyArrivals> early = early_.take(key);
  if (!early) {
    // The last member posted may complete a group whose others already qualify.
    if (message.options.budget_group != 0) settle_group(message.options.budget_group, now);
    return;
  }
  const EarlyArrivals& arrivals = *early;
  if (arrivals.flow) apply_flow(message, *arrivals.flow, now);
  for (const auto& datagram : arrivals.datagrams) {
    if (!incoming_.contains(key)) return;  // settled or failed while replaying
    auto header = wire::decode_data_packet(datagram, expectations_);
    if (header) {
      deliver(message, *header,
              std::span<const std::byte>(datagram).subspan(wire::kDataHeaderBytes,
                                                           header->payload_bytes),
              now);
    }
  }
  if (arrivals.round_finished && incoming_.contains(key)) {
    on_round_finished(key.peer, *arrivals.round_finished, now);
  }
}

bool Endpoint::admit(const wire::DataHeader& header, std::size_t bytes, std::size_t path,
                     TimePoint now) {
  if (!connected(header.src_rank)) {
    rejects_.add(wire::RejectReason::kBadSourceRank);
    return false;
  }
  peer(header.src_rank).delivered.on_packet(bytes, path, header.pair_seq, now);
  return true;
}

void Endpoint::note_tos(int rank, std::uint8_t tos) {
  if (policy::is_ce_marked(tos)) {
    peer(rank).delivered.on_ce_mark(options_.shared_band_dscps[tos >> 2]);
  }
}

void Endpoint::on_datagram(const wire::DataHeader& header, std::span<const std::byte> datagram,
                           std::uint8_t tos, std::size_t path, TimePoint now) {
  if (!admit(header, datagram.size(), path, now)) return;
  note_tos(header.src_rank, tos);
  const MessageKey key{header.src_rank, header.message_id};
  auto it = incoming_.find(key);
  if (it != incoming_.end()) {
    deliver(*it->second, header, datagram.subspan(wire::kDataHeaderBytes, header.payload_bytes),
            now);
    return;
  }
  if (may_hold_early(key, datagram.size())) {
    early_.hold(key, std::vector<std::byte>(datagram.begin(), datagram.end()), now);
  }
}

DirectPlacement Endpoint::direct_placement(const wire::DataHeader& header,
                                           std::size_t datagram_bytes, std::size_t path,
                                           TimePoint now) {
  if (!admit(header, datagram_bytes, path, now)) return {};
  const MessageKey key{header.src_rank, header.message_id};
  if (auto it = incoming_.find(key); it != incoming_.end()) {
    // A parity payload is not values: it is held whole (hold) and used from there.
    if (header.is_parity()) return {DirectPlacement::Action::kHold, {}};
    if (!placeable(*it->second, header)) return {};
    return {DirectPlacement::Action::kPlace, target(*it->second, header)};
  }
  if (may_hold_early(key, datagram_bytes)) return {DirectPlacement::Action::kHold, {}};
  return {};
}

void Endpoint::on_placed(const wire::DataHeader& header, std::uint8_t tos, TimePoint now) {
  note_tos(header.src_rank, tos);
  const auto it = incoming_.find({header.src_rank, header.message_id});
  if (it != incoming_.end()) commit(*it->second, header, now);
}

void Endpoint::hold(const wire::DataHeader& header, std::vector<std::byte> datagram,
                    std::uint8_t tos, TimePoint now) {
  note_tos(header.src_rank, tos);
  const MessageKey key{header.src_rank, header.message_id};
  if (auto it = incoming_.find(key); it != incoming_.end()) {
    // Only a parity packet of a posted receive is held here (direct_placement).
    deliver(
        *it->second, header,
        std::span<const std::byte>(datagram).subspan(wire::kDataHeaderBytes, header.payload_bytes),
        now);
    return;
  }
  early_.hold(key, std::move(datagram), now);
}

bool Endpoint::may_hold_early(const MessageKey& key, std::size_t bytes) {
  if (settled_.contains(key)) {
    rejects_.add(wire::RejectReason::kStaleMessage);
    return false;
  }
  if (const auto refused = early_.refusal(key, bytes)) {
    rejects_.add(*refused);
    return false;
  }
  return true;
}

bool Endpoint::accept_shape(Incoming& message, std::uint32_t total, std::uint16_t stride) {
  // Per-packet contribution counts are written by sequence number: their number must match.
  const auto& counts = message.contributions;
  if (stride == 0 || (!counts.empty() && counts.size() != wire::packet_count(total, stride))) {
    return false;
  }
  return message.receiver->accept_shape(total, stride);
}

bool Endpoint::placeable(Incoming& message, const wire::DataHeader& header) {
  if (!accept_shape(message, header.total_floats, header.stride_floats)) {
    rejects_.add(wire::RejectReason::kMismatchedMessage);
    return false;
  }
  if (message.receiver->has_packet(header.seq)) {
    rejects_.add(wire::RejectReason::kDuplicate);
    return false;
  }
  return true;
}

std::span<float> Endpoint::target(Incoming& message, const wire::DataHeader& header) {
  if (message.values.empty()) return {};
  return message.values.subspan(header.offset_floats(), header.expected_floats());
}

void Endpoint::record_packet(Incoming& message, std::uint32_t seq, std::uint16_t contributions,
                             std::uint8_t priority_class, TimePoint now) {
  const std::uint32_t floats = message.receiver->on_packet(seq, now);
  if (message.options.budget_group != 0) groups_.on_received(message.options.budget_group, floats);
  if (!message.contributions.empty()) message.contributions[seq] = contributions;
  ++message.stats.packets_received;
  message.stats.priority_class = priority_class;
}

void Endpoint::commit(Incoming& message, const wire::DataHeader& header, TimePoint now) {
  record_packet(message, header.seq, header.contributions, header.priority_class, now);
  // The packet may complete its parity group but one, which the held parity then rebuilds.
  if (message.parity) {
    if (const auto group = message.parity->group_of(header.seq)) rebuild(message, *group, now);
  }
  maybe_settle(message, now);
}

void Endpoint::deliver(Incoming& message, const wire::DataHeader& header,
                       std::span<const std::byte> payload, TimePoint now) {
  if (header.is_parity()) return on_parity(message, header, payload, now);
  if (!placeable(message, header)) return;
  const std::span<float> into = target(message, header);
  if (!into.empty()) wire::decode_values(payload, header.wire, into);
  commit(message, header, now);
}

void Endpoint::on_flow_start(int rank, const wire::FlowStart& flow, TimePoint now) {
  const MessageKey key{rank, flow.message_id};
  auto it = incoming_.find(key);
  if (it != incoming_.end()) {
    apply_flow(*it->second, flow, now);
    return;
  }
  // The FlowStart of a message that settled from its data alone, overtaken by its packets; or a
  // new use of a settled id whose receive is not posted yet (its packets refused as stale so far
  // are recovered by the missing-ranges round once the receive is posted).
  if (settled_.absorb_flow_start(key)) return;
  if (const auto refused = early_.hold(key, flow, now)) rejects_.add(*refused);
}

void Endpoint::apply_flow(Incoming& message, const wire::FlowStart& flow, TimePoint now) {
  if (!accept_shape(message, flow.total_floats, flow.stride_floats)) {
    fail_incoming(message, ErrorCode::kProtocol,
                  describe_peer(message.key.peer) + " sends " + std::to_string(flow.total_floats) +
                      " floats as message " + std::to_string(message.key.id) + " but " +
                      std::to_string(message.total_floats) + " were posted",
                  true);
    return;
  }
  const std::uint64_t allowed =
      message.receiver->on_flow(flow.protected_bitmap, flow.loss_budget_ppm, now);
  apply_parity(message, flow);
  if (message.options.budget_group != 0) {
    groups_.on_allowed(message.options.budget_group, message.group_allowed, allowed);
    message.group_allowed = allowed;
  }
  message.stats.priority_class = flow.priority_class;
  // Parity packets that came before the FlowStart may rebuild packets now.
  if (message.parity) {
    std::vector<std::uint32_t> held;
    for (const auto& entry : message.held_parity) held.push_back(entry.first);
    for (const std::uint32_t group : held) rebuild(message, group, now);
  }
  maybe_settle(message, now);
}

void Endpoint::on_round_finished(int rank, const wire::RoundFinished& finished, TimePoint now) {
  const MessageKey key{rank, finished.message_id};
  auto it = incoming_.find(key);
  if (it == incoming_.end()) {
    if (settled_.contains(key)) return;  // a late one for a message already settled
    if (const auto refused = early_.hold(key, finished, now)) rejects_.add(*refused);
    return;
  }
  Incoming& message = *it->second;
  message.receiver->on_round_finished(finished.round, now);
  timers_.schedule(*message.receiver->report_due(options_.quiet_before_report),
                   {key, Timer::Kind::kReport});
}

void Endpoint::send_missing_report(Incoming& message, TimePoint now) {
  const Peer& p = peer(message.key.peer);
  // The path's loss (of what this host sends the peer) sets the margin against losing the
  // retransmission too, so one round usually suffices.
  const double loss = p.pacing ? p.pacing->last_loss() : 0.0;
  std::uint64_t slack = 0;
  if (const auto* tracker = message.receiver->tracker();
      tracker && message.options.budget_group != 0) {
    slack = groups_.slack(message.options.budget_group, tracker->missing_floats(),
                          message.group_allowed);
  }
  const auto request =
      message.receiver->take_report(now, options_.quiet_before_report, loss, slack);
  if (!request) return;
  message.stats.rounds = message.receiver->recovery_rounds();
  send_control(message.key.peer,
               wire::MissingRanges{message.key.id, request->round, request->ranges});
}

void Endpoint::maybe_settle(Incoming& message, TimePoint now) {
  const std::uint64_t group = message.options.budget_group;
  if (message.receiver->settles_alone(group != 0)) {
    settle(message, message.receiver->settlement(), false, now);
  }
  // Every arrival changes the group's sum, which may release any of its open members.
  if (group != 0) settle_group(group, now);
}

void Endpoint::settle_group(std::uint64_t id, TimePoint now) {
  if (!groups_.within_budget(id)) return;
  // Settling ends members (and, with the last, the group): the list is taken first.
  std::vector<Incoming*> ready;
  for (const MessageKey& key : groups_.open_members(id)) {
    Incoming& member = *incoming_.at(key);
    if (member.receiver->may_settle_with_group()) ready.push_back(&member);
  }
  for (Incoming* member : ready) {
    const Settlement own = member->receiver->settlement();
    settle(*member, own == Settlement::kComplete ? own : Settlement::kBoundReached,
           own == Settlement::kOpen, now);
  }
}

void Endpoint::end_incoming(Incoming& message) {
  const MessageKey key = message.key;
  if (message.options.budget_group != 0) groups_.leave(message.options.budget_group, key);
  // Late packets of a transfer that started are refused as stale. One whose sender never showed
  // (no FlowStart, no packet: a receive that timed out first) may still be sent later, and a
  // receive posted again under its id must get it.
  if (message.receiver->flow_seen() || message.receiver->tracker() != nullptr) {
    settled_.remember(key, message.receiver->flow_seen());
  }
  incoming_.erase(key);
}

void Endpoint::settle(Incoming& message, Settlement settlement, bool by_group, TimePoint now) {
  const ReceiveTracker& tracker = *message.receiver->tracker();
  const MessageKey key = message.key;
  wire::Stop stop;
  stop.message_id = key.id;
  stop.reason = settlement == Settlement::kComplete ? wire::StopReason::kComplete
                                                    : wire::StopReason::kBoundReached;
  stop.packets_received = tracker.received_count();
  stop.packets_missing = tracker.packet_count() - tracker.received_count();
  send_control(key.peer, stop);

  MessageResult result;
  result.peer = key.peer;
  result.message_id = key.id;
  result.stats = message.stats;
  result.stats.packets = tracker.packet_count();
  result.stats.packets_received = tracker.received_count();
  result.stats.packets_missing = stop.packets_missing;
  result.stats.protected_missing = tracker.protected_missing();
  result.stats.entries_missing = tracker.missing_floats();
  result.stats.completion =
      settlement == Settlement::kComplete ? Completion::kComplete : Completion::kBoundReached;
  result.stats.seconds = to_seconds(now - message.posted);
  const SettlePhases phases = message.receiver->phases_at(now);
  result.stats.first_round_seconds = phases.first_round_seconds;
  result.stats.recovery_seconds = phases.recovery_seconds;
  // Only a message settled with entries missing had its tail cut: a complete one simply arrived
  // before the sender's RoundFinished did.
  result.stats.settled_before_round_end =
      phases.before_round_end && settlement == Settlement::kBoundReached;
  result.stats.settled_by_group = by_group;
  count_settlement(result.stats);
  for (const auto& range : tracker.missing_entries()) {
    result.missing.push_back({range.first, range.count});
  }
  complete(message.token, false, std::move(result));
  end_incoming(message);
}

void Endpoint::count_settlement(const MessageStats& stats) {
  ++(stats.completion == Completion::kComplete ? counters_.settled_complete
                                               : counters_.settled_within_budget);
  if (stats.settled_before_round_end) ++counters_.settled_before_round_end;
  if (stats.settled_by_group) ++counters_.settled_by_group;
  const std::size_t last = counters_.settled_by_rounds.size() - 1;
  ++counters_.settled_by_rounds[std::min<std::size_t>(stats.rounds, last)];
  counters_.first_round_time.add(stats.first_round_seconds);
  counters_.recovery_time.add(stats.recovery_seconds);
}

void Endpoint::fail_incoming(Incoming& message, ErrorCode code, const std::string& why,
                             bool tell_sender) {
  const MessageKey key = message.key;
  if (tell_sender && connected(key.peer)) {
    wire::Stop stop;
    stop.message_id = key.id;
    stop.reason =
        code == ErrorCode::kDeadline ? wire::StopReason::kDeadline : wire::StopReason::kAborted;
    if (const auto* tracker = message.receiver->tracker()) {
      stop.packets_received = tracker->received_count();
      stop.packets_missing = tracker->packet_count() - tracker->received_count();
    }
    send_control(key.peer, stop);
  }
  if (code == ErrorCode::kDeadline) ++counters_.receive_deadlines;
  fail(message.token, false, code, key.peer, why);
  end_incoming(message);
}

}  // namespace dlcp::protocol
