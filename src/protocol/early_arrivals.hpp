// What arrives for receives that are not posted yet: data packets, FlowStarts and RoundFinished
// frames, held until the receive is posted (then replayed) or until they expire. Datagrams
// (which anyone who knows the job token can forge) and FlowStarts (from authenticated peers only)
// have byte bounds of their own, so that a flood of forged packets cannot make a real transfer
// lose its FlowStart or RoundFinished, which the receiver needs to ask for whatever the flood
// pushed out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <unordered_map>
#include <vector>

#include "common/time.hpp"
#include "protocol/message_key.hpp"
#include "wire/control.hpp"
#include "wire/reject_reason.hpp"

namespace dlcp::protocol {

struct EarlyArrivals {
  std::vector<std::vector<std::byte>> datagrams;
  std::optional<wire::FlowStart> flow;
  std::optional<wire::RoundFinished> round_finished;
  std::size_t bytes = 0;  // of the datagrams
  TimePoint first_arrival{};

  std::size_t flow_bytes() const;
};

class EarlyArrivalBacklog {
 public:
  struct Limits {
    std::size_t bytes = 0;     // for the datagrams, and again for the FlowStarts
    std::size_t messages = 0;  // receives with something held
    Duration ttl{};            // how long a receive's first arrival may wait
  };
  explicit EarlyArrivalBacklog(const Limits& limits) : limits_(limits) {}

  // Why a datagram of `bytes` for `key` may not be held (kUnknownMessage: the backlog is full),
  // or nothing when it may: asked before the datagram is copied out of the socket.
  std::optional<wire::RejectReason> refusal(const MessageKey& key, std::size_t bytes) const;
  // Holds a datagram that refusal() let in.
  void hold(const MessageKey& key, std::vector<std::byte> datagram, TimePoint now);
  // Hold a FlowStart (replacing an earlier one) or a RoundFinished; the refusal, if any.
  std::optional<wire::RejectReason> hold(const MessageKey& key, const wire::FlowStart& flow,
                                         TimePoint now);
  std::optional<wire::RejectReason> hold(const MessageKey& key, const wire::RoundFinished& finished,
                                         TimePoint now);
  // What waited for `key`, now taken out, or nothing.
  std::optional<EarlyArrivals> take(const MessageKey& key);
  // Drops what waited longer than the ttl, and everything from a peer `lost` says is gone.
  void expire(TimePoint now, const std::function<bool(int peer)>& lost);

  std::size_t datagram_bytes() const { return datagram_bytes_; }
  std::size_t flow_bytes() const { return flow_bytes_; }
  std::size_t datagrams() const { return datagrams_; }
  std::size_t messages() const { return held_.size(); }

 private:
  bool room_for_another(const MessageKey& key) const {
    return held_.contains(key) || held_.size() < limits_.messages;
  }
  EarlyArrivals& entry(const MessageKey& key, TimePoint now);
  void account_removed(const EarlyArrivals& arrivals);

  Limits limits_;
  std::unordered_map<MessageKey, EarlyArrivals, MessageKeyHash> held_;
  std::size_t datagram_bytes_ = 0;
  std::size_t flow_bytes_ = 0;
  std::size_t datagrams_ = 0;
};

}  // namespace dlcp::protocol
