// Receiving: datagram validation, placement, the completion rule, missing-range reports and the
// bounded early-arrival backlog.
#include <algorithm>
#include <array>

#include "policy/policy.hpp"
#include "transport/engine.hpp"

namespace dlcp::transport {
namespace {

constexpr std::size_t kSettledMemory = 1 << 16;  // settled message ids remembered for stale packets
constexpr std::size_t kMaxEarlyMessages = 1 << 16;
constexpr std::size_t kDirectPlacementBytes = 8192;

}  // namespace

std::future<MessageResult> Engine::recv(int peer, std::uint64_t message_id, std::span<float> values,
                                        const MessageOptions& options) {
  try {
    options.validate();
  } catch (const std::invalid_argument& e) {
    throw Error(ErrorCode::kInvalidArgument, peer, e.what());
  }
  if (peer < 0 || peer >= options_.world_size || peer == options_.rank) {
    throw Error(ErrorCode::kInvalidArgument, peer,
                "recv from invalid rank " + std::to_string(peer));
  }
  if (values.empty() || values.size() > 0xFFFFFFFFull) {
    throw Error(ErrorCode::kInvalidArgument, peer,
                "message size must be 1 .. 2^32-1 floats, got " + std::to_string(values.size()));
  }
  auto message = std::make_unique<IncomingMessage>();
  message->key = {peer, message_id};
  message->values = values;
  message->options = options;
  message->budget_ppm = policy::budget_ppm(options.loss_budget);
  message->posted = SteadyClock::now();
  message->deadline = message->posted + options.deadline;
  message->last_packet = message->posted;
  message->timing = SettleTiming(message->posted);
  std::fill(options.packet_contributions.begin(), options.packet_contributions.end(),
            std::uint16_t{0});
  auto future = message->promise.get_future();
  auto holder = std::make_shared<std::unique_ptr<IncomingMessage>>(std::move(message));
  post([this, holder] { start_recv(std::move(*holder), SteadyClock::now()); });
  return future;
}

void Engine::start_recv(std::unique_ptr<IncomingMessage> message, TimePoint now) {
  const MessageKey key = message->key;
  PeerState& peer = peers_[static_cast<std::size_t>(key.peer)];
  if (stopping_.load()) {
    message->promise.set_exception(std::make_exception_ptr(
        Error(ErrorCode::kAborted, key.peer, "transport shut down before the receive was posted")));
    return;
  }
  if (!peer.failure.empty()) {
    message->promise.set_exception(
        std::make_exception_ptr(Error(ErrorCode::kPeerLost, key.peer, peer.failure)));
    return;
  }
  if (!aborted_.empty()) {
    message->promise.set_exception(std::make_exception_ptr(
        Error(ErrorCode::kAborted, key.peer, "transport aborted: " + aborted_)));
    return;
  }
  if (incoming_.contains(key)) {
    message->promise.set_exception(
        std::make_exception_ptr(Error(ErrorCode::kInvalidArgument, key.peer,
                                      "a receive of message " + std::to_string(key.id) + " from " +
                                          describe_peer(key.peer) + " is already posted")));
    return;
  }
  if (const std::uint64_t id = message->options.budget_group; id != 0) {
    BudgetGroup& group = groups_[id];
    if (group.size == 0) group.size = message->options.budget_group_size;
    if (group.size != message->options.budget_group_size || group.posted == group.size) {
      const std::string why = group.posted == group.size
                                  ? "budget group " + std::to_string(id) + " already has its " +
                                        std::to_string(group.size) + " receives"
                                  : "budget group " + std::to_string(id) + " was posted with " +
                                        std::to_string(group.size) + " receives, this one says " +
                                        std::to_string(message->options.budget_group_size);
      if (group.posted == 0) groups_.erase(id);
      message->promise.set_exception(
          std::make_exception_ptr(Error(ErrorCode::kInvalidArgument, key.peer, why)));
      return;
    }
    ++group.posted;
    group.missing += message->values.size();
    group.open.push_back(key);
  }
  // A reposted id starts a new transfer: forget that it was settled before.
  settled_.erase(key);
  IncomingMessage& ref = *message;
  incoming_.emplace(key, std::move(message));

  auto early = early_.find(key);
  if (early == early_.end()) {
    // The last member posted may complete a group whose others already qualify.
    if (ref.options.budget_group != 0) settle_group(ref.options.budget_group, now);
    return;
  }
  EarlyArrivals arrivals = std::move(early->second);
  early_.erase(early);
  early_bytes_ -= arrivals.bytes;
  early_flow_bytes_ -= arrivals.flow_bytes();
  if (arrivals.flow) apply_flow(ref, *arrivals.flow, now);
  for (const auto& datagram : arrivals.datagrams) {
    if (!incoming_.contains(key)) return;  // settled or failed while replaying
    auto header = wire::decode_data_packet(datagram, expectations_);
    if (header) {
      deliver(ref, *header,
              std::span<const std::byte>(datagram).subspan(wire::kDataHeaderBytes,
                                                           header->payload_bytes),
              now);
    }
  }
  if (arrivals.round_finished && incoming_.contains(key)) {
    if (arrivals.round_finished->round == 0) ref.timing.on_first_round_end(now);
    ref.mid_round = false;
    ref.report_pending = true;
    ref.report_round = arrivals.round_finished->round;
  }
}

void Engine::receive_on(std::size_t socket_index, TimePoint now) {
  if (direct_receive_[socket_index]) return receive_direct(socket_index, now);
  const auto batch = sockets_[socket_index].receive_batch();
  std::size_t bytes = 0;
  for (const auto& datagram : batch) {
    bytes += datagram.bytes.size();
    on_datagram(datagram.bytes, datagram.tos, socket_index, now);
  }
  // Large datagrams are worth a peek syscall each to save copying their payload twice. Not with
  // packet MACs: a payload must be verified before it may touch the caller's buffer.
  if (!batch.empty() && bytes >= kDirectPlacementBytes * batch.size() && !options_.packet_mac) {
    direct_receive_[socket_index] = 1;
  }
}

void Engine::receive_direct(std::size_t socket_index, TimePoint now) {
  DataSocket& socket = sockets_[socket_index];
  std::array<std::byte, wire::kDataHeaderBytes> header_bytes;
  // One batch per socket per wakeup, as on the batched path: sockets are serviced in turn, which
  // bounds how far arrival order strays from send order (see DeliveryMeter).
  for (int i = 0; i < options_.batch; ++i) {
    const std::optional<std::size_t> peeked = socket.peek(header_bytes);
    if (!peeked) return;
    const std::size_t size = *peeked;
    if (size < kDirectPlacementBytes) {
      // Small (or empty) datagrams again: the batched path reads and counts them.
      direct_receive_[socket_index] = 0;
      return receive_on(socket_index, now);
    }
    ++stats_.datagrams_received;
    stats_.bytes_received += size;
    auto decoded = wire::decode_data_header(header_bytes, size, expectations_);
    if (!decoded) {
      rejects_.add(decoded.error());
      socket.discard();
      continue;
    }
    const wire::DataHeader& header = *decoded;
    // TOS is only known after the receive; CE marks are rare enough to read on that path only.
    if (!admit(header, size, 0, socket_index, now)) {
      socket.discard();
      continue;
    }
    const MessageKey key{header.src_rank, header.message_id};
    std::uint8_t tos = 0;
    if (auto it = incoming_.find(key); it != incoming_.end()) {
      const std::span<float> target = placement(*it->second, header);
      if (target.empty()) {
        socket.discard();
        continue;
      }
      socket.receive_into(header_bytes, std::as_writable_bytes(target), tos);
      commit(*it->second, header, now);
    } else if (may_hold_early(key, size)) {
      std::vector<std::byte> copy(size);
      socket.receive_into(std::span(copy).first(wire::kDataHeaderBytes),
                          std::span(copy).subspan(wire::kDataHeaderBytes), tos);
      hold_early(key, std::move(copy), now);
    } else {
      socket.discard();
    }
    if (policy::is_ce_marked(tos)) {
      peers_[header.src_rank].delivered.on_ce_mark(shared_band_dscps_[tos >> 2]);
    }
  }
}

bool Engine::authenticate(const wire::DataHeader& header, std::span<const std::byte> datagram) {
  // The decoder has already refused packets whose trailer disagrees with the job's setting.
  if (!header.is_authenticated()) return true;
  PeerState& peer = peers_[header.src_rank];
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

bool Engine::admit(const wire::DataHeader& header, std::size_t bytes, std::uint8_t tos,
                   std::size_t socket_index, TimePoint now) {
  PeerState& peer = peers_[header.src_rank];
  if (!peer.connected) {
    rejects_.add(wire::RejectReason::kBadSourceRank);
    return false;
  }
  if (injector_ && injector_->should_drop(header.priority_class, header.src_rank)) {
    ++stats_.injected_drops;
    return false;
  }
  peer.delivered.on_packet(bytes, socket_index, header.pair_seq, now);
  if (policy::is_ce_marked(tos)) {
    peer.delivered.on_ce_mark(shared_band_dscps_[tos >> 2]);
  } else if (injector_ && injector_->should_mark(header.priority_class)) {
    // The direct path reads the TOS only after this: judge the band by the class's codepoint.
    ++stats_.injected_marks;
    const std::uint8_t class_tos =
        policy::data_tos(options_.policy, header.priority_class, policy::Precedence::kProtected);
    peer.delivered.on_ce_mark(shared_band_dscps_[class_tos >> 2]);
  }
  return true;
}

bool Engine::may_hold_early(const MessageKey& key, std::size_t bytes) {
  if (settled_.contains(key)) {
    rejects_.add(wire::RejectReason::kStaleMessage);
    return false;
  }
  if (early_bytes_ + bytes > options_.backlog_bytes ||
      (!early_.contains(key) && early_.size() >= kMaxEarlyMessages)) {
    rejects_.add(wire::RejectReason::kUnknownMessage);
    return false;
  }
  return true;
}

void Engine::hold_early(const MessageKey& key, std::vector<std::byte> datagram, TimePoint now) {
  EarlyArrivals& early = early_entry(key, now);
  early.bytes += datagram.size();
  early_bytes_ += datagram.size();
  early.datagrams.push_back(std::move(datagram));
}

void Engine::on_datagram(std::span<const std::byte> bytes, std::uint8_t tos,
                         std::size_t socket_index, TimePoint now) {
  ++stats_.datagrams_received;
  stats_.bytes_received += bytes.size();
  auto decoded = wire::decode_data_packet(bytes, expectations_);
  if (!decoded) {
    rejects_.add(decoded.error());
    return;
  }
  const wire::DataHeader& header = *decoded;
  if (!authenticate(header, bytes)) return;
  if (!admit(header, bytes.size(), tos, socket_index, now)) return;
  const MessageKey key{header.src_rank, header.message_id};
  auto it = incoming_.find(key);
  if (it != incoming_.end()) {
    deliver(*it->second, header, bytes.subspan(wire::kDataHeaderBytes, header.payload_bytes), now);
    return;
  }
  if (may_hold_early(key, bytes.size())) {
    hold_early(key, std::vector<std::byte>(bytes.begin(), bytes.end()), now);
  }
}

bool Engine::ensure_tracker(IncomingMessage& message, std::uint32_t total, std::uint16_t stride) {
  if (total != message.values.size()) return false;
  if (!message.tracker) {
    const auto& counts = message.options.packet_contributions;
    if (!counts.empty() && counts.size() != wire::packet_count(total, stride)) return false;
    message.tracker.emplace(total, stride);
    message.stats.packets = message.tracker->packet_count();
    return true;
  }
  return message.tracker->total_floats() == total &&
         message.tracker->floats_in(0) == std::min<std::uint32_t>(stride, total);
}

std::span<float> Engine::placement(IncomingMessage& message, const wire::DataHeader& header) {
  if (!ensure_tracker(message, header.total_floats, header.stride_floats)) {
    rejects_.add(wire::RejectReason::kMismatchedMessage);
    return {};
  }
  if (message.tracker->received(header.seq)) {
    rejects_.add(wire::RejectReason::kDuplicate);
    return {};
  }
  return message.values.subspan(header.offset_floats(), header.expected_floats());
}

void Engine::commit(IncomingMessage& message, const wire::DataHeader& header, TimePoint now) {
  message.tracker->mark_received(header.seq);
  if (message.options.budget_group != 0) {
    groups_[message.options.budget_group].missing -= message.tracker->floats_in(header.seq);
  }
  if (!message.options.packet_contributions.empty()) {
    message.options.packet_contributions[header.seq] = header.contributions;
  }
  ++message.stats.packets_received;
  message.stats.priority_class = header.priority_class;
  message.timing.on_sender_seen(now);
  message.last_packet = now;
  message.mid_round = true;
  maybe_settle(message, now);
}

void Engine::deliver(IncomingMessage& message, const wire::DataHeader& header,
                     std::span<const std::byte> payload, TimePoint now) {
  const std::span<float> target = placement(message, header);
  if (target.empty()) return;
  wire::load_floats(payload, target);
  commit(message, header, now);
}

void Engine::on_flow_start(PeerState& peer, const wire::FlowStart& flow, TimePoint now) {
  const MessageKey key{peer.rank, flow.message_id};
  auto it = incoming_.find(key);
  if (it != incoming_.end()) {
    apply_flow(*it->second, flow, now);
    return;
  }
  if (auto settled = settled_.find(key); settled != settled_.end()) {
    if (!settled->second.flow_seen) {
      // The FlowStart of a message that settled from its data alone, overtaken by its packets.
      settled->second.flow_seen = true;
      return;
    }
    // A new use of a settled id whose receive is not posted yet: its packets refused as stale
    // so far are recovered by the missing-ranges round once the receive is posted.
    settled_.erase(settled);
  }
  // The protected bitmap can be megabytes: FlowStarts have a bound of their own.
  const std::size_t flow_bytes = sizeof(wire::FlowStart) + flow.protected_bitmap.size();
  if (early_flow_bytes_ + flow_bytes > options_.backlog_bytes ||
      (!early_.contains(key) && early_.size() >= kMaxEarlyMessages)) {
    rejects_.add(wire::RejectReason::kUnknownMessage);
    return;
  }
  EarlyArrivals& early = early_entry(key, now);
  early_flow_bytes_ -= early.flow_bytes();
  early.flow = flow;
  early_flow_bytes_ += early.flow_bytes();
}

void Engine::apply_flow(IncomingMessage& message, const wire::FlowStart& flow, TimePoint now) {
  if (!ensure_tracker(message, flow.total_floats, flow.stride_floats)) {
    fail_incoming(message, ErrorCode::kProtocol,
                  describe_peer(message.key.peer) + " sends " + std::to_string(flow.total_floats) +
                      " floats as message " + std::to_string(message.key.id) + " but " +
                      std::to_string(message.values.size()) + " were posted",
                  true);
    return;
  }
  message.flow_seen = true;
  message.timing.on_sender_seen(now);
  message.tracker->set_flow(flow.protected_bitmap,
                            std::min(flow.loss_budget_ppm, message.budget_ppm));
  if (message.options.budget_group != 0) {
    BudgetGroup& group = groups_[message.options.budget_group];
    group.allowed -= message.group_allowed;
    message.group_allowed = message.tracker->allowed_missing_floats();
    group.allowed += message.group_allowed;
  }
  message.stats.priority_class = flow.priority_class;
  maybe_settle(message, now);
}

void Engine::on_round_finished(PeerState& peer, const wire::RoundFinished& finished,
                               TimePoint now) {
  const MessageKey key{peer.rank, finished.message_id};
  auto it = incoming_.find(key);
  if (it == incoming_.end()) {
    // Kept even when no packet was (the backlog may have been full): once the receive is
    // posted, it starts the missing-ranges report that recovers them.
    if (settled_.contains(key)) return;  // a late one for a message already settled
    if (!early_.contains(key) && early_.size() >= kMaxEarlyMessages) {
      rejects_.add(wire::RejectReason::kUnknownMessage);
      return;
    }
    early_entry(key, now).round_finished = finished;
    return;
  }
  IncomingMessage& message = *it->second;
  if (finished.round == 0) message.timing.on_first_round_end(now);
  message.mid_round = false;
  message.report_pending = true;
  message.report_round = finished.round;
  // Packets sent just before the round ended may still be queued behind the control message
  // (control has priority on the wire); the report waits for a quiet period.
  message.last_packet = std::max(message.last_packet, now);
}

void Engine::send_missing_report(IncomingMessage& message) {
  message.report_pending = false;
  if (!message.tracker) return;
  PeerState& peer = peers_[static_cast<std::size_t>(message.key.peer)];
  // Ask for a little more than the deficit when the path is losing packets, so one
  // retransmission round usually suffices.
  const double loss = peer.rate ? peer.rate->last_loss() : 0.0;
  wire::MissingRanges report;
  report.message_id = message.key.id;
  report.round = message.report_round;
  report.ranges =
      message.tracker->retransmit_request(std::min(0.5, 2 * loss), group_slack(message));
  if (report.ranges.empty()) return;
  ++message.stats.rounds;
  peer.control.send(report);
}

void Engine::maybe_settle(IncomingMessage& message, TimePoint now) {
  const Settlement settlement = message.tracker->settlement();
  const std::uint64_t group = message.options.budget_group;
  if (settlement == Settlement::kComplete || (settlement != Settlement::kOpen && group == 0)) {
    settle(message, settlement, false, now);
  }
  // A group member settles incomplete only on the group's budget, so that members which could
  // arrive whole do not spend the slack a late one needs. Every arrival changes the group's sum,
  // which may release any of its open members.
  if (group != 0) settle_group(group, now);
}

void Engine::settle_group(std::uint64_t id, TimePoint now) {
  const auto it = groups_.find(id);
  if (it == groups_.end()) return;
  const BudgetGroup& group = it->second;
  if (group.posted < group.size || group.missing > group.allowed) return;
  std::vector<IncomingMessage*> ready;
  for (const MessageKey& key : group.open) {
    IncomingMessage& member = *incoming_.at(key);
    const auto& tracker = member.tracker;
    if (tracker && tracker->has_flow() && tracker->protected_missing() == 0) {
      ready.push_back(&member);
    }
  }
  // Settling erases members (and, with the last, the group): the list is taken first.
  for (IncomingMessage* member : ready) {
    const Settlement own = member->tracker->settlement();
    settle(*member, own == Settlement::kComplete ? own : Settlement::kBoundReached,
           own == Settlement::kOpen, now);
  }
}

std::uint64_t Engine::group_slack(const IncomingMessage& message) const {
  const std::uint64_t id = message.options.budget_group;
  if (id == 0) return 0;
  const auto it = groups_.find(id);
  if (it == groups_.end() || it->second.posted < it->second.size) return 0;
  // What the other members leave unspent: the group's allowed less missing, without this one's.
  const BudgetGroup& group = it->second;
  const std::uint64_t own_missing = message.tracker->missing_floats();
  const std::uint64_t others_allowed = group.allowed - message.group_allowed;
  const std::uint64_t others_missing = group.missing - own_missing;
  return others_allowed > others_missing ? others_allowed - others_missing : 0;
}

void Engine::leave_group(const IncomingMessage& message) {
  const std::uint64_t id = message.options.budget_group;
  if (id == 0) return;
  const auto it = groups_.find(id);
  if (it == groups_.end()) return;
  BudgetGroup& group = it->second;
  std::erase(group.open, message.key);
  if (++group.ended == group.size) groups_.erase(it);
}

void Engine::settle(IncomingMessage& message, Settlement settlement, bool by_group, TimePoint now) {
  const ReceiveTracker& tracker = *message.tracker;
  const MessageKey key = message.key;
  PeerState& peer = peers_[static_cast<std::size_t>(key.peer)];
  wire::Stop stop;
  stop.message_id = key.id;
  stop.reason = settlement == Settlement::kComplete ? wire::StopReason::kComplete
                                                    : wire::StopReason::kBoundReached;
  stop.packets_received = tracker.received_count();
  stop.packets_missing = tracker.packet_count() - tracker.received_count();
  peer.control.send(stop);

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
  const SettlePhases phases = message.timing.at_settlement(now, message.stats.rounds);
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
  message.promise.set_value(std::move(result));
  leave_group(message);
  remember_settled(key, message.flow_seen);
  incoming_.erase(key);
}

void Engine::count_settlement(const MessageStats& stats) {
  ++(stats.completion == Completion::kComplete ? stats_.settled_complete
                                               : stats_.settled_within_budget);
  if (stats.settled_before_round_end) ++stats_.settled_before_round_end;
  if (stats.settled_by_group) ++stats_.settled_by_group;
  const std::size_t last = stats_.settled_by_rounds.size() - 1;
  ++stats_.settled_by_rounds[std::min<std::size_t>(stats.rounds, last)];
  stats_.first_round_time.add(stats.first_round_seconds);
  stats_.recovery_time.add(stats.recovery_seconds);
}

void Engine::fail_incoming(IncomingMessage& message, ErrorCode code, const std::string& why,
                           bool tell_sender) {
  const MessageKey key = message.key;
  PeerState& peer = peers_[static_cast<std::size_t>(key.peer)];
  if (tell_sender && peer.connected) {
    wire::Stop stop;
    stop.message_id = key.id;
    stop.reason =
        code == ErrorCode::kDeadline ? wire::StopReason::kDeadline : wire::StopReason::kAborted;
    if (message.tracker) {
      stop.packets_received = message.tracker->received_count();
      stop.packets_missing = message.tracker->packet_count() - message.tracker->received_count();
    }
    peer.control.send(stop);
  }
  if (code == ErrorCode::kDeadline) ++stats_.receive_deadlines;
  message.promise.set_exception(std::make_exception_ptr(Error(code, key.peer, why)));
  leave_group(message);
  remember_settled(key, message.flow_seen);
  incoming_.erase(key);
}

void Engine::remember_settled(const MessageKey& key, bool flow_seen) {
  const std::uint64_t generation = next_settled_generation_++;
  settled_[key] = {flow_seen, generation};
  settled_order_.emplace_back(key, generation);
  while (settled_order_.size() > kSettledMemory) {
    const auto& [old_key, old_generation] = settled_order_.front();
    auto it = settled_.find(old_key);
    if (it != settled_.end() && it->second.generation == old_generation) settled_.erase(it);
    settled_order_.pop_front();
  }
}

EarlyArrivals& Engine::early_entry(const MessageKey& key, TimePoint now) {
  auto [it, inserted] = early_.try_emplace(key);
  if (inserted) it->second.first_arrival = now;
  return it->second;
}

void Engine::expire_early_arrivals(TimePoint now) {
  // Arrivals for a receive that is never posted (a sender that gave up, a peer that died, forged
  // packets with the right token) must not hold backlog space forever.
  for (auto it = early_.begin(); it != early_.end();) {
    const bool peer_lost = !peers_[static_cast<std::size_t>(it->first.peer)].failure.empty();
    if (peer_lost || now - it->second.first_arrival > options_.early_arrival_ttl) {
      early_bytes_ -= it->second.bytes;
      early_flow_bytes_ -= it->second.flow_bytes();
      it = early_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace dlcp::transport
