// Setting up a control connection: dialling a peer with a timeout, exchanging Hello frames and
// proving knowledge of the job key both ways (job_key.hpp). The exchange, dialer first:
//   dialer -> listener: Hello (with the dialer's nonce)
//   listener -> dialer: Hello (with the listener's nonce)
//   dialer -> listener: Authenticate (dialer's proof over both Hellos)
//   listener -> dialer: Authenticate (listener's proof), sent only once the dialer's verified
// Neither side uses the connection before it has verified the other's proof, and the listener
// gives nothing away to a dialer that has not proved itself.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/fd.hpp"
#include "common/time.hpp"
#include "transport/job_key.hpp"
#include "wire/control.hpp"

namespace dlcp::transport {

// Handshake frames are small (a Hello lists at most 64 addresses): anything longer is refused
// before it is buffered.
inline constexpr std::size_t kMaxHandshakeFrameBytes = 1024;

struct DialResult {
  Fd fd;
  wire::Hello peer_hello;
  std::vector<std::byte> transcript;  // handshake_transcript(ours, peer_hello)
};

// Connects to host:port, retrying while the peer is not listening yet, runs the handshake above
// with `ours` (which carries a fresh nonce) before `deadline`. Verifies the peer's job token, that
// it is `peer` rank and its proof. Throws dlcp::Error(kConnect or kProtocol) naming the peer and
// the cause.
DialResult dial_peer(int peer, std::uint32_t ipv4, std::uint16_t port, const wire::Hello& ours,
                     const JobKey& key, TimePoint deadline);

// Checks a received Hello against ours (job token, world size, features such as the packet MAC)
// and our rank; returns an empty string when it is acceptable, otherwise why not.
std::string check_hello(const wire::Hello& hello, const wire::Hello& ours);

}  // namespace dlcp::transport
