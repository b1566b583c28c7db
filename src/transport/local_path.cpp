// The local path's peers, requests, deadlines, failures and counters.
#include "transport/local_path.hpp"

#include <algorithm>

#include "policy/policy.hpp"
#include "wire/data_header.hpp"

namespace dlcp::transport {

LocalPath::LocalPath(int world_size) : peers_(static_cast<std::size_t>(world_size)) {
  for (int rank = 0; rank < world_size; ++rank) peer(rank).rank = rank;
}

void LocalPath::add_peer(int rank, LocalLink link, std::string description) {
  Peer& p = peer(rank);
  p.description = std::move(description);
  p.link.emplace(std::move(link));
  p.out = RingWriter(p.link->outgoing.mapping.bytes());
  p.in = RingReader(p.link->incoming.mapping.bytes());
  p.wake_peer = true;  // records it wrote before we mapped its ring
}

bool LocalPath::linked(int rank) const {
  return peers_[static_cast<std::size_t>(rank)].link.has_value();
}

int LocalPath::wake_fd(int rank) const {
  const auto& link = peers_[static_cast<std::size_t>(rank)].link;
  return link ? link->wake.get() : -1;
}

std::optional<std::string> LocalPath::refusal(bool is_send) const {
  return protocol::closed_refusal(shut_down_, aborted_, is_send);
}

void LocalPath::post_send(protocol::SendRequest request, std::uint16_t packet_floats,
                          TimePoint now) {
  const int rank = request.key.peer;
  Peer& p = peer(rank);
  const std::uint64_t id = request.key.id;
  if (auto refused = refusal(true)) {
    return fail(request.token, true, ErrorCode::kAborted, rank, *refused);
  }
  if (p.failure) return fail(request.token, true, p.failure->code(), rank, p.failure->what());
  if (p.sending_ids.contains(id)) {
    return fail(
        request.token, true, ErrorCode::kInvalidArgument, rank,
        "a send of message " + std::to_string(id) + " to " + p.description + " is already posted");
  }
  Outgoing message;
  message.token = request.token;
  message.id = id;
  message.values = request.values;
  message.contributions = request.contributions;
  message.contribution = request.options.contributions;
  message.shape.send_seq = p.next_send_seq++;
  message.shape.message_id = id;
  message.shape.total_floats = request.total_floats;
  message.shape.packet_floats = packet_floats;
  message.shape.packets = wire::packet_count(request.total_floats, packet_floats);
  message.shape.wire = static_cast<std::uint8_t>(request.options.wire);
  message.shape.priority_class = static_cast<std::uint8_t>(
      policy::priority_class(request.options.layer, request.options.num_layers));
  message.order = next_order_++;
  message.posted = now;
  message.deadline = now + request.options.deadline;
  message.deadline_ms = request.options.deadline;
  const std::uint64_t seq = message.shape.send_seq;
  queue(p, local::Kind::kAnnounce, message.shape);
  p.sending_ids.emplace(id, seq);
  p.outgoing.emplace(seq, std::move(message));
  timers_.schedule(now + request.options.deadline, {rank, true, seq});
}

void LocalPath::post_receive(protocol::ReceiveRequest request, TimePoint now) {
  const int rank = request.key.peer;
  Peer& p = peer(rank);
  const std::uint64_t id = request.key.id;
  if (auto refused = refusal(false)) {
    return fail(request.token, false, ErrorCode::kAborted, rank, *refused);
  }
  if (p.failure) return fail(request.token, false, p.failure->code(), rank, p.failure->what());
  if (p.incoming.contains(id)) {
    return fail(request.token, false, ErrorCode::kInvalidArgument, rank,
                "a receive of message " + std::to_string(id) + " from rank " +
                    std::to_string(rank) + " is already posted");
  }
  Incoming message;
  message.token = request.token;
  message.id = id;
  message.values = request.values;
  message.contributions = request.contributions;
  message.options = request.options;
  message.posted = now;
  message.deadline = now + request.options.deadline;
  std::fill(message.contributions.begin(), message.contributions.end(), std::uint16_t{0});
  Incoming& ref = p.incoming.emplace(id, std::move(message)).first->second;
  timers_.schedule(ref.deadline, {rank, false, id});
  if (const auto it = p.announced.find(id); it != p.announced.end()) {
    const auto [announce, seen] = it->second;
    p.announced.erase(it);
    accept_announce(p, ref, announce, seen, now);
  }
}

std::vector<protocol::ReceiveRequest> LocalPath::take_parked(int rank, TimePoint now) {
  Peer& p = peer(rank);
  std::vector<protocol::ReceiveRequest> parked;
  for (auto& [id, message] : p.incoming) {
    protocol::ReceiveRequest request;
    request.key = {rank, id};
    request.token = message.token;
    request.values = message.values;
    request.total_floats = static_cast<std::uint32_t>(message.values.size());
    request.options = message.options;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(message.deadline - now);
    request.options.deadline = std::max(left, std::chrono::milliseconds(1));
    request.contributions = message.contributions;
    parked.push_back(request);
  }
  p.incoming.clear();
  return parked;
}

std::vector<protocol::ReceiveRequest> LocalPath::grouped_receives(int rank) const {
  std::vector<protocol::ReceiveRequest> grouped;
  for (const auto& [id, message] : peers_[static_cast<std::size_t>(rank)].incoming) {
    if (message.options.budget_group == 0) continue;
    protocol::ReceiveRequest request;
    request.key = {rank, id};
    request.total_floats = static_cast<std::uint32_t>(message.values.size());
    request.options = message.options;
    grouped.push_back(request);
  }
  return grouped;
}

void LocalPath::fail_receive(int rank, std::uint64_t id, ErrorCode code, const std::string& why) {
  fail_incoming(peer(rank), id, code, why);
}

void LocalPath::pump(TimePoint now) {
  for (Peer& p : peers_) {
    if (!p.link || p.failure) continue;
    try {
      read_records(p, now);
      write_records(p);
    } catch (const RingCorrupt& e) {
      const std::string why = std::string("corrupted the local path: ") + e.what();
      fail_peer(p.rank, Error(ErrorCode::kProtocol, p.rank, p.description + " " + why), now);
      broken_.push_back(Error(ErrorCode::kProtocol, p.rank, why));
      continue;
    }
    if (p.in.take_released()) p.wake_peer = true;
    if (p.wake_peer) {
      signal_wake_fd(p.link->peer_wake.get());
      p.wake_peer = false;
    }
  }
}

void LocalPath::on_timeout(TimePoint now) {
  Timer timer;
  while (timers_.pop_due(now, timer)) {
    Peer& p = peer(timer.peer);
    if (timer.is_send) {
      const auto it = p.outgoing.find(timer.key);
      if (it == p.outgoing.end() || now < it->second.deadline) continue;
      const Outgoing& message = it->second;
      fail_outgoing(p, timer.key, ErrorCode::kDeadline,
                    "message " + std::to_string(message.id) + " to " + p.description +
                        " was not settled by the receiver within " +
                        std::to_string(message.deadline_ms.count()) + " ms (local path, " +
                        (message.receive_seq == 0
                             ? std::string("the receive was never posted")
                             : std::to_string(message.next_packet) + " of " +
                                   std::to_string(message.shape.packets) + " packets written") +
                        ")");
      continue;
    }
    const auto it = p.incoming.find(timer.key);
    if (it == p.incoming.end() || now < it->second.deadline) continue;
    const Incoming& message = it->second;
    const std::string detail = message.shape
                                   ? std::to_string(message.packets_received) + " of " +
                                         std::to_string(message.shape->packets) + " packets"
                                   : std::string("no packets at all");
    ++counts_.receive_deadlines;
    const std::string who =
        p.description.empty() ? "rank " + std::to_string(p.rank) : p.description;
    fail_incoming(p, timer.key, ErrorCode::kDeadline,
                  "message " + std::to_string(message.id) + " from " + who +
                      " did not settle within " + std::to_string(message.options.deadline.count()) +
                      " ms (local path, " + detail + ")");
  }
}

void LocalPath::fail_all(Peer& p, ErrorCode code, const std::string& why) {
  std::vector<std::uint64_t> sends;
  for (const auto& [seq, message] : p.outgoing) sends.push_back(seq);
  for (const auto seq : sends) fail_outgoing(p, seq, code, why);
  std::vector<std::uint64_t> receives;
  for (const auto& [id, message] : p.incoming) receives.push_back(id);
  for (const auto id : receives) fail_incoming(p, id, code, why);
}

void LocalPath::fail_peer(int rank, const Error& error, TimePoint now) {
  Peer& p = peer(rank);
  if (p.failure) return;
  if (p.link) {
    try {
      read_records(p, now);
    } catch (const RingCorrupt&) {
      // It fails anyway, with the cause the caller names.
    }
  }
  p.failure = error;
  fail_all(p, error.code(), error.what());
  // Unmapped and closed now: the peer's memory is freed as soon as it is gone too.
  p.out = RingWriter();
  p.in = RingReader();
  p.link.reset();
  p.records.clear();
  p.announced.clear();
}

void LocalPath::abort(const std::string& why) {
  if (aborted_.empty()) aborted_ = why.empty() ? "aborted" : why;
  for (Peer& p : peers_) fail_all(p, ErrorCode::kAborted, "aborted: " + aborted_);
}

void LocalPath::shut_down(const std::string& why) {
  if (shut_down_.empty()) shut_down_ = why.empty() ? "shut down" : why;
  for (Peer& p : peers_) {
    fail_all(p, ErrorCode::kAborted, shut_down_ + " before the message settled");
  }
}

void LocalPath::complete(std::uint64_t token, bool is_send, MessageResult result) {
  completions_.push_back({token, is_send, std::move(result), std::nullopt});
}

void LocalPath::fail(std::uint64_t token, bool is_send, ErrorCode code, int rank,
                     const std::string& why) {
  protocol::Completed done;
  done.token = token;
  done.is_send = is_send;
  done.error = Error(code, rank, why);
  completions_.push_back(std::move(done));
}

void LocalPath::take_completions(std::vector<protocol::Completed>& out) {
  out.clear();
  std::swap(out, completions_);
}

void LocalPath::add_counters(TransportCounters& c) const {
  c.local_messages_sent += counts_.messages_sent;
  c.local_messages_received += counts_.messages_received;
  c.local_bytes_sent += counts_.bytes_sent;
  c.local_bytes_received += counts_.bytes_received;
  c.settled_complete += counts_.messages_received;
  c.settled_by_rounds[0] += counts_.messages_received;
  c.receive_deadlines += counts_.receive_deadlines;
  c.first_round_time.merge(counts_.first_round_time);
  c.recovery_time.merge(counts_.recovery_time);
}

}  // namespace dlcp::transport
