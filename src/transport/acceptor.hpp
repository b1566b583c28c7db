// The listening side of joining: the control listener and the connections still in their
// handshake (handshake.hpp), each waiting for the dialer's Hello, then for its proof. A bounded
// number wait at once and each only for a while, so a flood of idle connections cannot exhaust
// descriptors or keep a real peer out.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <unordered_map>
#include <vector>

#include "common/fd.hpp"
#include "common/time.hpp"
#include "dlcp/options.hpp"
#include "transport/control_channel.hpp"
#include "transport/job_key.hpp"
#include "transport/poller.hpp"
#include "wire/control.hpp"
#include "wire/reject_reason.hpp"

namespace dlcp::transport {

inline constexpr Duration kHandshakeTimeout = std::chrono::seconds(10);

// A dialer that proved itself: its connection, Hello and the handshake's transcript. The listener's
// own proof is still to be sent (Acceptor::proof), once the peer is registered.
struct AcceptedPeer {
  ControlChannel control;
  wire::Hello hello;
  std::vector<std::byte> transcript;
};

class Acceptor {
 public:
  // `our_hello` makes this host's Hello (a fresh nonce each); `joined(rank)` says whether a rank
  // already completed a handshake.
  Acceptor(const TransportOptions& options, std::uint32_t bind_ipv4, const JobKey& key,
           Poller& poller, std::function<wire::Hello()> our_hello, std::function<bool(int)> joined);

  std::uint16_t port() const { return port_; }
  // New connections on the listener, watched as pending.
  void accept(TimePoint now);
  // A pending connection is readable: the proven peer once its handshake completes.
  std::optional<AcceptedPeer> on_readable(std::uint64_t id);
  // The listener's proof for an accepted peer.
  wire::Authenticate proof(const AcceptedPeer& peer) const;
  // Drops handshakes that took longer than kHandshakeTimeout (counted).
  void expire(TimePoint now);
  const wire::RejectCounters& rejects() const { return rejects_; }

 private:
  struct Pending {
    ControlChannel control;
    TimePoint accepted{};
    std::optional<wire::Hello> dialer_hello;
    std::vector<std::byte> transcript;  // once our Hello is sent
  };
  // The handshake steps; false when the connection must be dropped (counted).
  bool on_dialer_hello(Pending& pending, const wire::ControlMessage& message);
  bool on_dialer_proof(Pending& pending, const wire::ControlMessage& message);
  void drop(std::unordered_map<std::uint64_t, Pending>::iterator it, wire::RejectReason reason);

  const TransportOptions& options_;
  const JobKey& key_;
  Poller& poller_;
  std::function<wire::Hello()> our_hello_;
  std::function<bool(int)> joined_;
  Fd listener_;
  std::uint16_t port_ = 0;
  std::unordered_map<std::uint64_t, Pending> pending_;
  std::uint64_t next_id_ = 0;
  wire::RejectCounters rejects_;
};

}  // namespace dlcp::transport
