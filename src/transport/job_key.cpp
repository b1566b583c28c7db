#include "transport/job_key.hpp"

#include <sodium.h>

#include <stdexcept>
#include <string_view>

#include "wire/byte_order.hpp"

namespace dlcp::transport {
namespace {

// Domain separation: every derived value hashes its own label first.
constexpr std::string_view kSecretLabel = "dlcp job key v1";
constexpr std::string_view kTokenLabel = "dlcp token key v1";
constexpr std::string_view kPacketLabel = "dlcp packet key v1";
constexpr std::string_view kProofLabel = "dlcp handshake proof v1";

void ensure_sodium() {
  // Thread-safe and idempotent; fails only when the system has no usable random source.
  static const int ready = sodium_init();
  if (ready < 0) throw std::runtime_error("libsodium could not be initialised");
}

const unsigned char* bytes_of(std::string_view text) {
  return reinterpret_cast<const unsigned char*>(text.data());
}

const unsigned char* bytes_of(std::span<const std::byte> bytes) {
  return reinterpret_cast<const unsigned char*>(bytes.data());
}

}  // namespace

Nonce random_nonce() {
  ensure_sodium();
  Nonce nonce;
  randombytes_buf(nonce.data(), nonce.size());
  return nonce;
}

std::vector<std::uint8_t> random_secret(std::size_t bytes) {
  ensure_sodium();
  std::vector<std::uint8_t> secret(bytes);
  randombytes_buf(secret.data(), secret.size());
  return secret;
}

std::string to_hex(std::span<const std::uint8_t> bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string text;
  text.reserve(bytes.size() * 2);
  for (const std::uint8_t b : bytes) {
    text.push_back(kDigits[b >> 4]);
    text.push_back(kDigits[b & 0xF]);
  }
  return text;
}

std::optional<std::vector<std::uint8_t>> parse_hex(const std::string& text) {
  if (text.size() % 2 != 0) return std::nullopt;
  auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::vector<std::uint8_t> bytes;
  bytes.reserve(text.size() / 2);
  for (std::size_t i = 0; i < text.size(); i += 2) {
    const int high = digit(text[i]);
    const int low = digit(text[i + 1]);
    if (high < 0 || low < 0) return std::nullopt;
    bytes.push_back(static_cast<std::uint8_t>(high << 4 | low));
  }
  return bytes;
}

std::vector<std::byte> handshake_transcript(const wire::Hello& dialer,
                                            const wire::Hello& listener) {
  // Encoding is canonical (decode then encode reproduces the bytes), so both sides build the
  // same transcript from the frames they sent and received.
  std::vector<std::byte> transcript;
  wire::encode_control(dialer, transcript);
  wire::encode_control(listener, transcript);
  return transcript;
}

JobKey::JobKey(std::span<const std::uint8_t> secret, std::uint64_t job_token) {
  ensure_sodium();
  if (secret.empty()) {
    std::array<std::byte, 8> token{};
    wire::put_u64(token, 0, job_token);
    crypto_generichash_state state;
    crypto_generichash_init(&state, nullptr, 0, key_.size());
    crypto_generichash_update(&state, bytes_of(kTokenLabel), kTokenLabel.size());
    crypto_generichash_update(&state, bytes_of(token), token.size());
    crypto_generichash_final(&state, key_.data(), key_.size());
    return;
  }
  if (secret.size() < kMinSecretBytes || secret.size() > kMaxSecretBytes) {
    throw std::invalid_argument("job secret must be " + std::to_string(kMinSecretBytes) + ".." +
                                std::to_string(kMaxSecretBytes) + " bytes, got " +
                                std::to_string(secret.size()));
  }
  crypto_generichash(key_.data(), key_.size(), bytes_of(kSecretLabel), kSecretLabel.size(),
                     secret.data(), secret.size());
}

Proof JobKey::proof(HandshakeRole role, std::span<const std::byte> transcript) const {
  static_assert(crypto_auth_hmacsha512256_BYTES == wire::kProofBytes);
  static_assert(crypto_auth_hmacsha512256_KEYBYTES == kKeyBytes);
  const auto role_byte = static_cast<unsigned char>(role);
  crypto_auth_hmacsha512256_state state;
  crypto_auth_hmacsha512256_init(&state, key_.data(), key_.size());
  crypto_auth_hmacsha512256_update(&state, bytes_of(kProofLabel), kProofLabel.size());
  crypto_auth_hmacsha512256_update(&state, &role_byte, 1);
  crypto_auth_hmacsha512256_update(&state, bytes_of(transcript), transcript.size());
  Proof out;
  crypto_auth_hmacsha512256_final(&state, out.data());
  return out;
}

bool JobKey::verify(HandshakeRole role, std::span<const std::byte> transcript,
                    const Proof& received) const {
  const Proof expected = proof(role, transcript);
  return crypto_verify_32(expected.data(), received.data()) == 0;
}

Key JobKey::packet_key(std::span<const std::byte> transcript, std::uint16_t from,
                       std::uint16_t to) const {
  std::array<std::byte, 4> ranks{};
  wire::put_u16(ranks, 0, from);
  wire::put_u16(ranks, 2, to);
  crypto_generichash_state state;
  crypto_generichash_init(&state, key_.data(), key_.size(), kKeyBytes);
  crypto_generichash_update(&state, bytes_of(kPacketLabel), kPacketLabel.size());
  crypto_generichash_update(&state, bytes_of(ranks), ranks.size());
  crypto_generichash_update(&state, bytes_of(transcript), transcript.size());
  Key out;
  crypto_generichash_final(&state, out.data(), out.size());
  return out;
}

MacTag PacketMac::compute(std::uint64_t counter, std::span<const std::byte> header,
                          std::span<const std::byte> payload) const {
  static_assert(crypto_onetimeauth_BYTES == wire::kMacTagBytes);
  static_assert(crypto_stream_chacha20_ietf_NONCEBYTES == 12);
  std::array<std::byte, crypto_stream_chacha20_ietf_NONCEBYTES> nonce{};
  wire::put_u64(nonce, 4, counter);
  std::array<unsigned char, crypto_onetimeauth_KEYBYTES> one_time_key;
  crypto_stream_chacha20_ietf(one_time_key.data(), one_time_key.size(), bytes_of(nonce),
                              key_.data());
  crypto_onetimeauth_state state;
  crypto_onetimeauth_init(&state, one_time_key.data());
  crypto_onetimeauth_update(&state, bytes_of(header), header.size());
  crypto_onetimeauth_update(&state, bytes_of(payload), payload.size());
  MacTag tag;
  crypto_onetimeauth_final(&state, tag.data());
  sodium_memzero(one_time_key.data(), one_time_key.size());
  return tag;
}

bool PacketMac::verify(std::uint64_t counter, std::span<const std::byte> header,
                       std::span<const std::byte> payload, const MacTag& tag) const {
  const MacTag expected = compute(counter, header, payload);
  return crypto_verify_16(expected.data(), tag.data()) == 0;
}

}  // namespace dlcp::transport
