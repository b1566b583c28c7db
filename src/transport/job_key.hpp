// The job's keys, derived with libsodium from the per-job secret: the proofs that authenticate
// every control connection in both directions, and the keys of the optional per-packet MAC.
//
// Handshake (docs/security.md): the dialer and the listener exchange Hello frames, each carrying
// a fresh random nonce; the "transcript" is the dialer's encoded Hello frame followed by the
// listener's. Each side then proves it holds the job key with HMAC-SHA512-256 over its role and
// the transcript. Fresh nonces stop replays, the role stops a proof being reflected back, and the
// transcript binds the proof to both ranks, the job token and the announced data addresses.
//
// Packet keys are derived per connection (the transcript) and per direction, so the packet MAC's
// counter starts at 0 on every connection without ever reusing a one-time key.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "wire/control.hpp"
#include "wire/data_header.hpp"

namespace dlcp::transport {

inline constexpr std::size_t kKeyBytes = 32;
// Accepted secret lengths (BLAKE2b key limits).
inline constexpr std::size_t kMinSecretBytes = 16;
inline constexpr std::size_t kMaxSecretBytes = 64;

using Key = std::array<std::uint8_t, kKeyBytes>;
using Proof = std::array<std::uint8_t, wire::kProofBytes>;
using Nonce = std::array<std::uint8_t, wire::kNonceBytes>;
using MacTag = std::array<std::uint8_t, wire::kMacTagBytes>;

enum class HandshakeRole : std::uint8_t { kDialer = 1, kListener = 2 };

// Fresh random bytes from the operating system's generator.
Nonce random_nonce();
std::vector<std::uint8_t> random_secret(std::size_t bytes = kKeyBytes);

// Hex text of bytes, and back; parse_hex returns nothing for text that is not whole hex bytes.
std::string to_hex(std::span<const std::uint8_t> bytes);
std::optional<std::vector<std::uint8_t>> parse_hex(const std::string& text);

// The transcript both sides prove: the dialer's Hello frame, then the listener's.
std::vector<std::byte> handshake_transcript(const wire::Hello& dialer, const wire::Hello& listener);

class JobKey {
 public:
  // secret: kMinSecretBytes..kMaxSecretBytes, or empty. Empty derives the key from the job token,
  // which every data packet carries in clear: it keeps out only those who cannot see the traffic
  // (the default of bare transports in tests and benchmarks; the communicator always has a real
  // secret). Throws std::invalid_argument for other lengths.
  JobKey(std::span<const std::uint8_t> secret, std::uint64_t job_token);

  Proof proof(HandshakeRole role, std::span<const std::byte> transcript) const;
  // Constant-time comparison against the expected proof.
  bool verify(HandshakeRole role, std::span<const std::byte> transcript, const Proof& proof) const;
  // Key of the packet MAC for packets from rank `from` to rank `to` on this connection.
  Key packet_key(std::span<const std::byte> transcript, std::uint16_t from, std::uint16_t to) const;

 private:
  Key key_{};
};

// The per-packet MAC: Poly1305 over the header and payload, with a one-time key drawn from
// ChaCha20 under the direction's packet key and the packet's counter as nonce. A counter must
// never repeat under one key (the sender counts up from 0; keys are per connection).
class PacketMac {
 public:
  explicit PacketMac(const Key& key) : key_(key) {}

  MacTag compute(std::uint64_t counter, std::span<const std::byte> header,
                 std::span<const std::byte> payload) const;
  bool verify(std::uint64_t counter, std::span<const std::byte> header,
              std::span<const std::byte> payload, const MacTag& tag) const;

 private:
  Key key_;
};

}  // namespace dlcp::transport
