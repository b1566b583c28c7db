#include "transport/job_key.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <stdexcept>
#include <vector>

namespace dlcp::transport {
namespace {

std::vector<std::uint8_t> secret_of(std::uint8_t fill, std::size_t size = 32) {
  return std::vector<std::uint8_t>(size, fill);
}

wire::Hello hello(std::uint16_t rank, std::uint8_t nonce_fill) {
  wire::Hello m;
  m.job_token = 77;
  m.rank = rank;
  m.world_size = 4;
  m.data_sockets = {{0x7F000001u, static_cast<std::uint16_t>(40000 + rank)}};
  m.nonce.fill(nonce_fill);
  return m;
}

std::vector<std::byte> bytes(std::size_t n, std::uint8_t seed) {
  std::vector<std::byte> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<std::byte>(seed + 31 * i);
  return out;
}

TEST(JobKey, ProofsVerifyOnlyForTheSameSecretRoleAndTranscript) {
  const JobKey key(secret_of(1), 77);
  const auto transcript = handshake_transcript(hello(3, 0xAA), hello(1, 0xBB));
  const Proof dialer = key.proof(HandshakeRole::kDialer, transcript);
  EXPECT_TRUE(key.verify(HandshakeRole::kDialer, transcript, dialer));
  // Same secret and token, so a second object agrees (the other side of the connection).
  EXPECT_TRUE(JobKey(secret_of(1), 77).verify(HandshakeRole::kDialer, transcript, dialer));
  // A proof cannot be reflected: the listener's differs from the dialer's.
  EXPECT_FALSE(key.verify(HandshakeRole::kListener, transcript, dialer));
  // Another secret, another nonce, or one flipped bit of the proof fails.
  EXPECT_FALSE(JobKey(secret_of(2), 77).verify(HandshakeRole::kDialer, transcript, dialer));
  const auto replayed = handshake_transcript(hello(3, 0xAA), hello(1, 0xBC));
  EXPECT_FALSE(key.verify(HandshakeRole::kDialer, replayed, dialer));
  Proof flipped = dialer;
  flipped[7] ^= 0x10;
  EXPECT_FALSE(key.verify(HandshakeRole::kDialer, transcript, flipped));
}

TEST(JobKey, TheTranscriptBindsRanksAndAddresses) {
  const JobKey key(secret_of(9), 77);
  const auto transcript = handshake_transcript(hello(3, 1), hello(1, 2));
  const Proof proof = key.proof(HandshakeRole::kDialer, transcript);
  wire::Hello other_rank = hello(3, 1);
  other_rank.rank = 2;
  EXPECT_FALSE(
      key.verify(HandshakeRole::kDialer, handshake_transcript(other_rank, hello(1, 2)), proof));
  wire::Hello other_address = hello(3, 1);
  other_address.data_sockets[0].port = 1;
  EXPECT_FALSE(
      key.verify(HandshakeRole::kDialer, handshake_transcript(other_address, hello(1, 2)), proof));
}

TEST(JobKey, WithoutASecretTheKeyFollowsTheToken) {
  const auto transcript = handshake_transcript(hello(1, 5), hello(0, 6));
  const Proof proof = JobKey({}, 77).proof(HandshakeRole::kListener, transcript);
  EXPECT_TRUE(JobKey({}, 77).verify(HandshakeRole::kListener, transcript, proof));
  EXPECT_FALSE(JobKey({}, 78).verify(HandshakeRole::kListener, transcript, proof));
  EXPECT_FALSE(JobKey(secret_of(0), 77).verify(HandshakeRole::kListener, transcript, proof));
}

TEST(JobKey, RefusesSecretsOfImpossibleLength) {
  EXPECT_THROW(JobKey(secret_of(1, kMinSecretBytes - 1), 1), std::invalid_argument);
  EXPECT_THROW(JobKey(secret_of(1, kMaxSecretBytes + 1), 1), std::invalid_argument);
  EXPECT_NO_THROW(JobKey(secret_of(1, kMinSecretBytes), 1));
  EXPECT_NO_THROW(JobKey(secret_of(1, kMaxSecretBytes), 1));
}

TEST(JobKey, PacketKeysDifferPerDirectionAndConnection) {
  const JobKey key(secret_of(4), 77);
  const auto first = handshake_transcript(hello(1, 1), hello(0, 2));
  const auto second = handshake_transcript(hello(1, 3), hello(0, 2));
  std::set<Key> keys{key.packet_key(first, 1, 0), key.packet_key(first, 0, 1),
                     key.packet_key(second, 1, 0), key.packet_key(second, 0, 1)};
  EXPECT_EQ(keys.size(), 4u);
  // Both ends derive the same key for one direction.
  EXPECT_EQ(key.packet_key(first, 1, 0), JobKey(secret_of(4), 77).packet_key(first, 1, 0));
}

TEST(PacketMac, DetectsAnyChangeToHeaderPayloadOrCounter) {
  const JobKey key(secret_of(4), 77);
  const PacketMac mac(key.packet_key(handshake_transcript(hello(1, 1), hello(0, 2)), 1, 0));
  const auto header = bytes(wire::kDataHeaderBytes, 3);
  const auto payload = bytes(1400, 9);
  const MacTag tag = mac.compute(5, header, payload);
  EXPECT_TRUE(mac.verify(5, header, payload, tag));
  EXPECT_FALSE(mac.verify(6, header, payload, tag)) << "another counter";
  for (const std::size_t at : {std::size_t{0}, std::size_t{13}, wire::kDataHeaderBytes - 1}) {
    auto changed = header;
    changed[at] ^= std::byte{1};
    EXPECT_FALSE(mac.verify(5, changed, payload, tag)) << "header byte " << at;
  }
  for (const std::size_t at : {std::size_t{0}, std::size_t{700}, std::size_t{1399}}) {
    auto changed = payload;
    changed[at] ^= std::byte{0x80};
    EXPECT_FALSE(mac.verify(5, header, changed, tag)) << "payload byte " << at;
  }
  // A flipped tag bit fails.
  MacTag other = tag;
  other[0] ^= 1;
  EXPECT_FALSE(mac.verify(5, header, payload, other));
  // Another direction's key does not verify it.
  const PacketMac reverse(key.packet_key(handshake_transcript(hello(1, 1), hello(0, 2)), 0, 1));
  EXPECT_FALSE(reverse.verify(5, header, payload, tag));
  // Different counters give different tags for the same bytes (one-time keys).
  EXPECT_NE(mac.compute(1, header, payload), mac.compute(2, header, payload));
}

TEST(Hex, RoundTripsAndRefusesMalformedText) {
  const std::vector<std::uint8_t> raw{0x00, 0x0F, 0xA5, 0xFF};
  EXPECT_EQ(to_hex(raw), "000fa5ff");
  EXPECT_EQ(parse_hex("000fa5ff"), raw);
  EXPECT_EQ(parse_hex("000FA5FF"), raw);
  EXPECT_EQ(parse_hex(""), std::vector<std::uint8_t>{});
  EXPECT_FALSE(parse_hex("abc").has_value());
  EXPECT_FALSE(parse_hex("zz").has_value());
  EXPECT_FALSE(parse_hex("0x12").has_value());
  EXPECT_EQ(random_secret().size(), kKeyBytes);
  EXPECT_NE(random_secret(), random_secret());
}

}  // namespace
}  // namespace dlcp::transport
