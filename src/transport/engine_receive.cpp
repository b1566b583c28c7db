// Receiving: datagram validation and placement, then each message's MessageReceiver decides
// (settlement, budget groups, missing-range reports); arrivals for receives not posted yet go to
// the backlog (engine_backlog.cpp).
#include <algorithm>
#include <array>

#include "policy/policy.hpp"
#include "transport/engine.hpp"
#include "wire/values.hpp"

namespace dlcp::transport {
namespace {

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
  message->posted = SteadyClock::now();
  message->deadline = message->posted + options.deadline;
  message->receiver.emplace(values.size(), policy::budget_ppm(options.loss_budget),
                            message->posted);
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
    const std::string refused =
        groups_.join(id, message->options.budget_group_size, key, message->values.size());
    if (!refused.empty()) {
      message->promise.set_exception(
          std::make_exception_ptr(Error(ErrorCode::kInvalidArgument, key.peer, refused)));
      return;
    }
  }
  // A reposted id starts a new transfer: forget that it was settled before.
  settled_.forget(key);
  IncomingMessage& ref = *message;
  incoming_.emplace(key, std::move(message));
  timers_.schedule(ref.deadline, {key, MessageTimer::Kind::kReceiveDeadline});

  std::optional<protocol::EarlyArrivals> early = early_.take(key);
  if (!early) {
    // The last member posted may complete a group whose others already qualify.
    if (ref.options.budget_group != 0) settle_group(ref.options.budget_group, now);
    return;
  }
  const protocol::EarlyArrivals& arrivals = *early;
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
    on_round_finished(peer, *arrivals.round_finished, now);
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
      if (header.wire == WireDtype::kFloat32) {
        socket.receive_into(header_bytes, std::as_writable_bytes(target), tos);
      } else {
        // 16-bit values need converting: through a scratch buffer, then into place.
        const std::span<std::byte> payload(direct_scratch_.data(), header.payload_bytes);
        socket.receive_into(header_bytes, payload, tos);
        wire::decode_values(payload, header.wire, target);
      }
      commit(*it->second, header, now);
    } else if (may_hold_early(key, size)) {
      std::vector<std::byte> copy(size);
      socket.receive_into(std::span(copy).first(wire::kDataHeaderBytes),
                          std::span(copy).subspan(wire::kDataHeaderBytes), tos);
      early_.hold(key, std::move(copy), now);
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
    early_.hold(key, std::vector<std::byte>(bytes.begin(), bytes.end()), now);
  }
}

bool Engine::may_hold_early(const MessageKey& key, std::size_t bytes) {
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

bool Engine::accept_shape(IncomingMessage& message, std::uint32_t total, std::uint16_t stride) {
  // Per-packet contribution counts are written by sequence number: their number must match.
  const auto& counts = message.options.packet_contributions;
  if (stride == 0 || (!counts.empty() && counts.size() != wire::packet_count(total, stride))) {
    return false;
  }
  return message.receiver->accept_shape(total, stride);
}

std::span<float> Engine::placement(IncomingMessage& message, const wire::DataHeader& header) {
  if (!accept_shape(message, header.total_floats, header.stride_floats)) {
    rejects_.add(wire::RejectReason::kMismatchedMessage);
    return {};
  }
  if (message.receiver->has_packet(header.seq)) {
    rejects_.add(wire::RejectReason::kDuplicate);
    return {};
  }
  return message.values.subspan(header.offset_floats(), header.expected_floats());
}

void Engine::commit(IncomingMessage& message, const wire::DataHeader& header, TimePoint now) {
  const std::uint32_t floats = message.receiver->on_packet(header.seq, now);
  if (message.options.budget_group != 0) groups_.on_received(message.options.budget_group, floats);
  if (!message.options.packet_contributions.empty()) {
    message.options.packet_contributions[header.seq] = header.contributions;
  }
  ++message.stats.packets_received;
  message.stats.priority_class = header.priority_class;
  maybe_settle(message, now);
}

void Engine::deliver(IncomingMessage& message, const wire::DataHeader& header,
                     std::span<const std::byte> payload, TimePoint now) {
  const std::span<float> target = placement(message, header);
  if (target.empty()) return;
  wire::decode_values(payload, header.wire, target);
  commit(message, header, now);
}

void Engine::on_flow_start(PeerState& peer, const wire::FlowStart& flow, TimePoint now) {
  const MessageKey key{peer.rank, flow.message_id};
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

void Engine::apply_flow(IncomingMessage& message, const wire::FlowStart& flow, TimePoint now) {
  if (!accept_shape(message, flow.total_floats, flow.stride_floats)) {
    fail_incoming(message, ErrorCode::kProtocol,
                  describe_peer(message.key.peer) + " sends " + std::to_string(flow.total_floats) +
                      " floats as message " + std::to_string(message.key.id) + " but " +
                      std::to_string(message.values.size()) + " were posted",
                  true);
    return;
  }
  const std::uint64_t allowed =
      message.receiver->on_flow(flow.protected_bitmap, flow.loss_budget_ppm, now);
  if (message.options.budget_group != 0) {
    groups_.on_allowed(message.options.budget_group, message.group_allowed, allowed);
    message.group_allowed = allowed;
  }
  message.stats.priority_class = flow.priority_class;
  maybe_settle(message, now);
}

void Engine::on_round_finished(PeerState& peer, const wire::RoundFinished& finished,
                               TimePoint now) {
  const MessageKey key{peer.rank, finished.message_id};
  auto it = incoming_.find(key);
  if (it == incoming_.end()) {
    if (settled_.contains(key)) return;  // a late one for a message already settled
    if (const auto refused = early_.hold(key, finished, now)) rejects_.add(*refused);
    return;
  }
  IncomingMessage& message = *it->second;
  message.receiver->on_round_finished(finished.round, now);
  timers_.schedule(*message.receiver->report_due(options_.quiet_before_report),
                   {key, MessageTimer::Kind::kReport});
}

void Engine::send_missing_report(IncomingMessage& message, TimePoint now) {
  PeerState& peer = peers_[static_cast<std::size_t>(message.key.peer)];
  // The path's loss (of what this host sends the peer) sets the margin against losing the
  // retransmission too, so one round usually suffices.
  const double loss = peer.pacing ? peer.pacing->last_loss() : 0.0;
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
  peer.control.send(wire::MissingRanges{message.key.id, request->round, request->ranges});
}

void Engine::maybe_settle(IncomingMessage& message, TimePoint now) {
  const std::uint64_t group = message.options.budget_group;
  if (message.receiver->settles_alone(group != 0)) {
    settle(message, message.receiver->settlement(), false, now);
  }
  // Every arrival changes the group's sum, which may release any of its open members.
  if (group != 0) settle_group(group, now);
}

void Engine::settle_group(std::uint64_t id, TimePoint now) {
  if (!groups_.within_budget(id)) return;
  // Settling ends members (and, with the last, the group): the list is taken first.
  std::vector<IncomingMessage*> ready;
  for (const MessageKey& key : groups_.open_members(id)) {
    IncomingMessage& member = *incoming_.at(key);
    if (member.receiver->may_settle_with_group()) ready.push_back(&member);
  }
  for (IncomingMessage* member : ready) {
    const protocol::Settlement own = member->receiver->settlement();
    settle(*member,
           own == protocol::Settlement::kComplete ? own : protocol::Settlement::kBoundReached,
           own == protocol::Settlement::kOpen, now);
  }
}

void Engine::end_incoming(IncomingMessage& message) {
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

void Engine::settle(IncomingMessage& message, protocol::Settlement settlement, bool by_group,
                    TimePoint now) {
  const protocol::ReceiveTracker& tracker = *message.receiver->tracker();
  const MessageKey key = message.key;
  PeerState& peer = peers_[static_cast<std::size_t>(key.peer)];
  wire::Stop stop;
  stop.message_id = key.id;
  stop.reason = settlement == protocol::Settlement::kComplete ? wire::StopReason::kComplete
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
  result.stats.completion = settlement == protocol::Settlement::kComplete
                                ? Completion::kComplete
                                : Completion::kBoundReached;
  result.stats.seconds = to_seconds(now - message.posted);
  const protocol::SettlePhases phases = message.receiver->phases_at(now);
  result.stats.first_round_seconds = phases.first_round_seconds;
  result.stats.recovery_seconds = phases.recovery_seconds;
  // Only a message settled with entries missing had its tail cut: a complete one simply arrived
  // before the sender's RoundFinished did.
  result.stats.settled_before_round_end =
      phases.before_round_end && settlement == protocol::Settlement::kBoundReached;
  result.stats.settled_by_group = by_group;
  count_settlement(result.stats);
  for (const auto& range : tracker.missing_entries()) {
    result.missing.push_back({range.first, range.count});
  }
  message.promise.set_value(std::move(result));
  end_incoming(message);
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
    if (const auto* tracker = message.receiver->tracker()) {
      stop.packets_received = tracker->received_count();
      stop.packets_missing = tracker->packet_count() - tracker->received_count();
    }
    peer.control.send(stop);
  }
  if (code == ErrorCode::kDeadline) ++stats_.receive_deadlines;
  message.promise.set_exception(std::make_exception_ptr(Error(code, key.peer, why)));
  end_incoming(message);
}

}  // namespace dlcp::transport
