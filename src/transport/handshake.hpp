// Setting up a control connection: dialling a peer with a timeout and exchanging Hello frames.
#pragma once

#include <cstdint>
#include <string>

#include "common/fd.hpp"
#include "common/time.hpp"
#include "wire/control.hpp"

namespace dlcp::transport {

struct DialResult {
  Fd fd;
  wire::Hello peer_hello;
};

// Connects to host:port, retrying while the peer is not listening yet, sends `ours` and reads the
// peer's Hello, all before `deadline`. Verifies the peer's job token and that it is `peer` rank.
// Throws dlcp::Error(kConnect or kProtocol) naming the peer and the cause.
DialResult dial_peer(int peer, std::uint32_t ipv4, std::uint16_t port, const wire::Hello& ours,
                     TimePoint deadline);

// Checks a received Hello against what this endpoint expects; returns an empty string when it is
// acceptable, otherwise why not.
std::string check_hello(const wire::Hello& hello, std::uint64_t job_token, int world_size,
                        int local_rank);

}  // namespace dlcp::transport
