// The dlcp transport: bounded-loss, priority-aware messages of float32 values over UDP, and
// loss-free through shared memory between ranks of one host (TransportOptions::local_path).
//
//   dlcp::TransportOptions options;            // rank, world size, job token, paths, ...
//   auto transport = dlcp::Transport::create(options);
//   transport->connect(peer, host, peer_control_port);   // both sides call it for each peer
//   auto sent = transport->send(peer, id, values, {.layer = 3, .num_layers = 50,
//                                                   .loss_budget = 0.05});
//   auto got = transport->recv(peer, id, buffer, {.loss_budget = 0.05});
//   dlcp::MessageResult r = got.get();         // throws dlcp::Error on deadline or dead peer
//
// A receive settles once every protected packet and all but at most loss_budget of the entries
// have arrived (the smaller of the sender's and receiver's budgets applies); entries that never
// arrived are left untouched in the buffer and listed in MessageResult::missing. A budget of 0 is
// reliable delivery. Buffers must stay alive and unchanged until the future is ready. A message
// id names one transfer between one pair of ranks and must not be reused while packets of an
// earlier use may still be in flight (collectives put the round into the id).
#pragma once

#include <array>
#include <cstdint>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "dlcp/error.hpp"
#include "dlcp/histogram.hpp"
#include "dlcp/options.hpp"

namespace dlcp {

enum class Completion : std::uint8_t {
  kComplete,      // every entry arrived
  kBoundReached,  // settled with some drop-eligible entries missing, within budget
  kDeadline,      // not settled in time (only inside an Error's context)
  kAborted,
};

const char* to_string(Completion completion);

// Half-open range of entries [first, first + count).
struct MissingRange {
  std::uint64_t first = 0;
  std::uint64_t count = 0;
  bool operator==(const MissingRange&) const = default;
};

struct MessageStats {
  std::uint64_t packets = 0;                // packets the message is cut into
  std::uint64_t packets_sent = 0;           // sender: transmissions, retransmissions included
  std::uint64_t packets_retransmitted = 0;  // sender: retransmissions only
  std::uint64_t packets_received = 0;       // distinct packets that arrived (or were rebuilt)
  std::uint64_t packets_rebuilt = 0;        // receiver: of those, rebuilt from parity
  std::uint64_t packets_missing = 0;
  std::uint64_t protected_missing = 0;  // always zero for a settled message
  std::uint64_t entries_missing = 0;
  std::uint32_t rounds = 0;  // retransmission rounds after the first
  std::uint32_t priority_class = 0;
  Completion completion = Completion::kComplete;
  double seconds = 0;  // from post to settlement
  // Receiver: the first round, from the sender's first sign (its FlowStart or a packet) to the
  // end of its first pass over the message, or to settlement if that came first; then the
  // recovery, from that end to settlement (0 when no missing-range round was needed).
  double first_round_seconds = 0;
  double recovery_seconds = 0;
  // Receiver: settled within budget, entries missing, before the sender finished its first pass
  // (the budget cut the tail).
  bool settled_before_round_end = false;
  // Receiver: settled with more entries missing than its own budget allows, within its budget
  // group's (MessageOptions::budget_group).
  bool settled_by_group = false;
};

struct MessageResult {
  int peer = -1;
  std::uint64_t message_id = 0;
  MessageStats stats;
  std::vector<MissingRange> missing;  // receiver only: entries that never arrived
};

// Endpoint-wide counters, snapshot by Transport::counters().
struct TransportCounters {
  std::uint64_t datagrams_received = 0;
  std::uint64_t datagrams_sent = 0;
  std::uint64_t bytes_received = 0;
  std::uint64_t bytes_sent = 0;
  // Of the datagrams and bytes sent, those that recovery rounds resent (what a loss-free run
  // would not have sent).
  std::uint64_t datagrams_retransmitted = 0;
  // Parity (TransportOptions::parity_members): parity packets sent (among datagrams_sent) and
  // received, and lost packets rebuilt from them, each a recovery round spared.
  std::uint64_t parity_sent = 0;
  std::uint64_t parity_received = 0;
  std::uint64_t packets_rebuilt = 0;
  std::uint64_t bytes_retransmitted = 0;
  // TransportOptions::local_path: messages settled through shared memory with peers on this host
  // (in none of the datagram counts), and their payload bytes in the wire dtype.
  std::uint64_t local_messages_sent = 0;
  std::uint64_t local_messages_received = 0;
  std::uint64_t local_bytes_sent = 0;
  std::uint64_t local_bytes_received = 0;
  std::uint64_t injected_drops = 0;
  std::uint64_t injected_marks = 0;   // LossInjectionOptions::class_mark_rate
  std::uint64_t backlog_packets = 0;  // early packets held for receives not yet posted
  std::uint64_t backlog_bytes = 0;    // what they (and early FlowStarts) hold, <= backlog_bytes
  std::uint64_t rejected = 0;         // all rejections
  std::vector<std::pair<std::string, std::uint64_t>> rejected_by_reason;  // nonzero reasons only
  double send_rate_bytes_per_s = 0;  // current paced rate towards the busiest peer
  // RateControlOptions::shared_band_pacing: the shared band's pacer towards the peer it lets send
  // fastest (0 when off).
  double shared_band_send_rate_bytes_per_s = 0;
  // Sender: rate reports received from all peers, and those whose loss exceeded
  // RateControlOptions::congestion_loss (each cut the rate towards what got through).
  std::uint64_t rate_reports = 0;
  std::uint64_t rate_reports_congested = 0;
  // What this host offers, shared among the peers sending to it: RateControlOptions::receive_rate,
  // else the link speed of the hardware NICs the data sockets are bound to, else max_rate.
  double receive_rate_bytes_per_s = 0;
  // TransportOptions::control_rto_min as the kernel took it on the control connections (0: the
  // kernel's default, because it was asked for or the kernel lacks TCP_RTO_MIN_US).
  std::uint64_t control_rto_min_us = 0;
  // The control connections now open, as the kernel sees them: TCP segments they resent (each a
  // control frame delayed by at least a retransmission timeout), and the largest such timeout.
  std::uint64_t control_retransmits = 0;
  std::uint64_t control_rto_max_us = 0;
  double io_thread_cpu_seconds = 0;  // CPU time used by the transport's I/O thread so far

  // Receiver side, one count per message received: how it ended and where its time went (see
  // MessageStats::first_round_seconds and recovery_seconds).
  std::uint64_t settled_complete = 0;          // every packet arrived
  std::uint64_t settled_within_budget = 0;     // drop-eligible entries missing, within budget
  std::uint64_t settled_before_round_end = 0;  // within budget, before the first pass ended
  std::uint64_t settled_by_group = 0;          // within budget, its group's (MessageStats)
  std::uint64_t receive_deadlines = 0;         // not settled by the deadline (an error)
  // [r]: settled messages that needed r missing-range rounds (the last entry: that many or more).
  std::array<std::uint64_t, 8> settled_by_rounds{};
  DurationHistogram first_round_time;
  DurationHistogram recovery_time;  // 0 for a message that needed no round
};

// How a transfer ended: its result, or the error that ended it (a dlcp::Error).
struct MessageOutcome {
  std::optional<MessageResult> result;
  std::exception_ptr error;

  bool ok() const { return error == nullptr; }
  // The result, or the error rethrown.
  MessageResult get() && {
    if (error) std::rethrow_exception(error);
    return std::move(*result);
  }
};

// Called once when a transfer ends, on the transport's I/O thread. It must return quickly and
// must not wait for another transfer of the same transport (that one can only end on the same
// thread); posting new transfers from it is fine. An exception escaping it is reported on
// stderr and otherwise ignored.
using MessageCallback = std::function<void(MessageOutcome)>;

class Transport {
 public:
  // Binds the control listener and the data sockets and starts the I/O thread.
  // Throws dlcp::Error (kInvalidArgument, kSystem).
  static std::unique_ptr<Transport> create(const TransportOptions& options);
  virtual ~Transport() = default;

  virtual int rank() const = 0;
  virtual std::uint16_t control_port() const = 0;

  // Joins `peer`, whose control listener is at host:port. The higher rank of each pair dials, the
  // lower waits to be dialled; either way this returns once the handshake (job token, ranks,
  // data addresses) is done and throws dlcp::Error(kConnect) naming the peer after the connect
  // timeout.
  virtual void connect(int peer, const std::string& host, std::uint16_t port) = 0;

  // Posts a transfer; `done` runs once the receiver settled the message, or with the error that
  // ended it. Invalid arguments throw dlcp::Error(kInvalidArgument) here, and `done` never runs.
  // `contributions` (collectives; empty otherwise) holds one count per packet: a send reads
  // them (each 1..world size, overriding MessageOptions::contributions); a receive zeroes them
  // when posted and writes each arriving packet's count, so 0 marks a packet that never arrived.
  // Buffers and counts must stay alive and unchanged until `done` runs.
  virtual void send(int peer, std::uint64_t message_id, std::span<const float> values,
                    const MessageOptions& options, std::span<const std::uint16_t> contributions,
                    MessageCallback done) = 0;
  virtual void recv(int peer, std::uint64_t message_id, std::span<float> values,
                    const MessageOptions& options, std::span<std::uint16_t> contributions,
                    MessageCallback done) = 0;

  // The same, with a future that is ready when the transfer ends (get() throws its error).
  std::future<MessageResult> send(int peer, std::uint64_t message_id, std::span<const float> values,
                                  const MessageOptions& options,
                                  std::span<const std::uint16_t> contributions = {});
  std::future<MessageResult> recv(int peer, std::uint64_t message_id, std::span<float> values,
                                  const MessageOptions& options,
                                  std::span<std::uint16_t> contributions = {});

  virtual TransportCounters counters() const = 0;

  // Floats per packet the path to `peer` carries (MessageOptions::packet_floats may lower it);
  // 0 before connect(peer) returned.
  virtual std::uint16_t max_packet_floats(int peer) const = 0;

  // The first peer failure seen (lost control connection), if any.
  virtual std::optional<Error> failure() const = 0;
  // Calls `listener` once with the first peer failure, on the I/O thread (at once, on the
  // caller's thread, when one happened already), so that collectives fail at once when any rank
  // dies, not only their transfers with it. The same rules as for MessageCallback apply.
  virtual void on_failure(std::function<void(const Error&)> listener) = 0;

  // Fails every message in flight with kAborted (telling the peers) and refuses new ones; returns
  // once no buffer of a failed message will be touched again.
  virtual void abort(const std::string& why) = 0;
};

}  // namespace dlcp
