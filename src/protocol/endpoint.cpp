// The endpoint's peers, control dispatch, failures, lifecycle and counters.
#include "protocol/endpoint.hpp"

#include <algorithm>
#include <type_traits>
#include <variant>

#include "protocol/endpoint_state.hpp"

namespace dlcp::protocol {

Endpoint::Endpoint(const EndpointOptions& options)
    : options_(options),
      early_({options.backlog_bytes, options.max_early_messages,
              std::chrono::duration_cast<Duration>(options.early_arrival_ttl)}),
      settled_(options.settled_memory) {
  expectations_ = {options_.job_token, static_cast<std::uint16_t>(options_.rank),
                   static_cast<std::uint32_t>(options_.world_size), options_.trailer_bytes > 0};
  for (int r = 0; r < std::max(options_.world_size, 0); ++r) {
    peers_.push_back(std::make_unique<Peer>());
    peers_.back()->rank = r;
  }
}

Endpoint::~Endpoint() = default;

std::string Endpoint::describe_peer(int rank) const {
  std::string text = "rank " + std::to_string(rank);
  if (rank >= 0 && static_cast<std::size_t>(rank) < peers_.size() &&
      !peer(rank).link.address.empty()) {
    text += " (" + peer(rank).link.address + ")";
  }
  return text;
}

bool Endpoint::connected(int rank) const {
  return rank >= 0 && static_cast<std::size_t>(rank) < peers_.size() && peer(rank).connected;
}

void Endpoint::on_peer_joined(int rank, const PeerLink& link, TimePoint now) {
  Peer& p = peer(rank);
  if (p.joined) {
    throw Error(ErrorCode::kProtocol, rank, "rank " + std::to_string(rank) + " connected twice");
  }
  p.link = link;
  p.pacing.emplace(options_.rate, link.datagram_bytes + options_.datagram_overhead_bytes,
                   options_.feedback_interval, now);
  p.paths.emplace(link.send_paths);
  p.path_sent.assign(link.send_paths, 0);
  p.delivered = DeliveryMeter(link.receive_paths);
  p.connected = true;
  p.joined = true;
}

void Endpoint::send_control(int rank, wire::ControlMessage message) {
  outputs_.control.push_back({rank, std::move(message)});
}

void Endpoint::complete(std::uint64_t token, bool is_send, MessageResult result) {
  outputs_.completions.push_back({token, is_send, std::move(result), std::nullopt});
}

void Endpoint::fail(std::uint64_t token, bool is_send, ErrorCode code, int rank,
                    const std::string& why) {
  Completed done;
  done.token = token;
  done.is_send = is_send;
  done.error = Error(code, rank, why);
  outputs_.completions.push_back(std::move(done));
}

void Endpoint::take_outputs(EndpointOutputs& out) {
  out.clear();
  std::swap(out, outputs_);
}

void Endpoint::on_control(int rank, const wire::ControlMessage& message, TimePoint now) {
  if (!connected(rank)) return;
  std::visit(
      [&](const auto& body) {
        using T = std::decay_t<decltype(body)>;
        if constexpr (std::is_same_v<T, wire::Hello> || std::is_same_v<T, wire::Authenticate>) {
          rejects_.add(wire::RejectReason::kBadControlType);  // only valid in the handshake
        } else if constexpr (std::is_same_v<T, wire::FlowStart>) {
          on_flow_start(rank, body, now);
        } else if constexpr (std::is_same_v<T, wire::RoundFinished>) {
          on_round_finished(rank, body, now);
        } else if constexpr (std::is_same_v<T, wire::MissingRanges>) {
          on_missing_ranges(rank, body);
        } else if constexpr (std::is_same_v<T, wire::Stop>) {
          on_stop(rank, body, now);
        } else if constexpr (std::is_same_v<T, wire::RateFeedback>) {
          on_rate_feedback(rank, body, now);
        } else if constexpr (std::is_same_v<T, wire::Abort>) {
          lose_peer(rank, "aborted the job: " + body.reason, ErrorCode::kAborted, now);
        } else if constexpr (std::is_same_v<T, wire::Goodbye>) {
          peer(rank).said_goodbye = true;
        }
      },
      message);
}

void Endpoint::on_peer_lost(int rank, const std::string& why, ErrorCode code, TimePoint now) {
  lose_peer(rank, why, code, now);
}

std::string Endpoint::own_stall_note(int except_peer, TimePoint now) const {
  // Long enough that it is not merely a transfer in progress.
  constexpr Duration kStalled = std::chrono::milliseconds(500);
  const Incoming* oldest = nullptr;
  for (const auto& [key, message] : incoming_) {
    const TimePoint last = message->receiver->last_packet();
    if (key.peer == except_peer || now - last < kStalled) continue;
    if (oldest == nullptr || last < oldest->receiver->last_packet()) oldest = message.get();
  }
  if (oldest == nullptr) return {};
  const auto waited =
      std::chrono::duration_cast<std::chrono::milliseconds>(now - oldest->receiver->last_packet())
          .count();
  const auto* tracker = oldest->receiver->tracker();
  return "; rank " + std::to_string(options_.rank) + " was itself waiting for message " +
         std::to_string(oldest->key.id) + " from " + describe_peer(oldest->key.peer) +
         " (no packet for " + std::to_string(waited) + " ms, " +
         (tracker ? std::to_string(tracker->received_count()) + " of " +
                        std::to_string(tracker->packet_count()) + " packets"
                  : std::string("no packets at all")) +
         ")";
}

void Endpoint::lose_peer(int rank, const std::string& why, ErrorCode code, TimePoint now) {
  Peer& p = peer(rank);
  if (!p.connected) return;
  p.failure = describe_peer(rank) + " " + why;
  if (code == ErrorCode::kAborted) p.failure += own_stall_note(rank, now);
  if (p.said_goodbye) p.failure = describe_peer(rank) + " left the job (shut down)";
  p.connected = false;
  const Error error(code, rank, p.failure);
  if (!p.said_goodbye && !first_failure_) first_failure_ = error;
  outputs_.lost_peers.push_back({rank, error, !p.said_goodbye});
  std::vector<Outgoing*> out;
  for (auto& [key, message] : outgoing_) {
    if (key.peer == rank) out.push_back(message.get());
  }
  for (auto* message : out) fail_outgoing(*message, code, p.failure);
  std::vector<Incoming*> in;
  for (auto& [key, message] : incoming_) {
    if (key.peer == rank) in.push_back(message.get());
  }
  for (auto* message : in) fail_incoming(*message, code, p.failure, false);
}

void Endpoint::abort(const std::string& why, TimePoint /*now*/) {
  if (aborted_.empty()) aborted_ = why.empty() ? "aborted" : why;
  std::vector<Outgoing*> out;
  for (auto& [key, message] : outgoing_) out.push_back(message.get());
  for (auto* message : out) fail_outgoing(*message, ErrorCode::kAborted, "aborted: " + aborted_);
  std::vector<Incoming*> in;
  for (auto& [key, message] : incoming_) in.push_back(message.get());
  for (auto* message : in) {
    fail_incoming(*message, ErrorCode::kAborted, "aborted: " + aborted_, false);
  }
  // Peers fail their messages with us at once, naming the cause, instead of at a deadline.
  for (const auto& p : peers_) {
    if (p->connected) send_control(p->rank, wire::Abort{aborted_});
  }
}

void Endpoint::say_goodbye() {
  for (const auto& p : peers_) {
    if (p->connected) send_control(p->rank, wire::Goodbye{});
  }
}

void Endpoint::shut_down(const std::string& why) {
  if (shut_down_.empty()) shut_down_ = why.empty() ? "shut down" : why;
  std::vector<Outgoing*> out;
  for (auto& [key, message] : outgoing_) out.push_back(message.get());
  for (auto* message : out) {
    fail_outgoing(*message, ErrorCode::kAborted, shut_down_ + " before the message settled");
  }
  std::vector<Incoming*> in;
  for (auto& [key, message] : incoming_) in.push_back(message.get());
  for (auto* message : in) {
    fail_incoming(*message, ErrorCode::kAborted, shut_down_ + " before the message settled", false);
  }
}

std::optional<std::string> closed_refusal(const std::string& shut_down, const std::string& aborted,
                                          bool is_send) {
  if (!shut_down.empty()) {
    return shut_down +
           (is_send ? " before the message was sent" : " before the receive was posted");
  }
  if (!aborted.empty()) return "transport aborted: " + aborted;
  return std::nullopt;
}

std::optional<std::string> Endpoint::refusal(bool is_send) const {
  return closed_refusal(shut_down_, aborted_, is_send);
}

void Endpoint::add_counters(TransportCounters& c) const {
  c.datagrams_sent += counters_.datagrams_sent;
  c.bytes_sent += counters_.bytes_sent;
  c.datagrams_retransmitted += counters_.datagrams_retransmitted;
  c.bytes_retransmitted += counters_.bytes_retransmitted;
  c.parity_sent += counters_.parity_sent;
  c.parity_received += counters_.parity_received;
  c.packets_rebuilt += counters_.packets_rebuilt;
  c.backlog_packets = early_.datagrams();
  c.backlog_bytes = early_.datagram_bytes();
  for (const auto& p : peers_) {
    if (!p->pacing) continue;
    c.send_rate_bytes_per_s = std::max(c.send_rate_bytes_per_s, p->pacing->rate());
    c.shared_band_send_rate_bytes_per_s =
        std::max(c.shared_band_send_rate_bytes_per_s, p->pacing->shared_band_rate());
    c.rate_reports += p->pacing->reports();
    c.rate_reports_congested += p->pacing->congested_reports();
  }
  c.receive_rate_bytes_per_s = options_.receive_rate;
  c.settled_complete += counters_.settled_complete;
  c.settled_within_budget += counters_.settled_within_budget;
  c.settled_before_round_end += counters_.settled_before_round_end;
  c.settled_by_group += counters_.settled_by_group;
  c.receive_deadlines += counters_.receive_deadlines;
  for (std::size_t i = 0; i < c.settled_by_rounds.size(); ++i) {
    c.settled_by_rounds[i] += counters_.settled_by_rounds[i];
  }
  c.first_round_time = counters_.first_round_time;
  c.recovery_time = counters_.recovery_time;
}

}  // namespace dlcp::protocol
