#include <gtest/gtest.h>

#include <array>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "wire/byte_order.hpp"
#include "wire/data_header.hpp"
#include "wire/reject_reason.hpp"
#include "wire/values.hpp"

namespace dlcp::wire {
namespace {

constexpr std::uint64_t kJob = 0x0123456789ABCDEFull;

DataExpectations expectations(std::uint16_t local_rank = 1, std::uint32_t world_size = 4) {
  DataExpectations e;
  e.job_token = kJob;
  e.local_rank = local_rank;
  e.world_size = world_size;
  return e;
}

// The same for a job that authenticates its packets.
DataExpectations mac_expectations() {
  DataExpectations e = expectations();
  e.packet_mac = true;
  return e;
}

// A valid first packet of a 1000-float message cut into 360-float packets, from rank 2 to rank 1.
DataHeader valid_header() {
  DataHeader h;
  h.flags = data_flags::kProtected;
  h.job_token = kJob;
  h.src_rank = 2;
  h.dst_rank = 1;
  h.message_id = 77;
  h.seq = 0;
  h.total_floats = 1000;
  h.stride_floats = 360;
  h.contributions = 3;
  h.priority_class = 5;
  h.round = 0;
  h.payload_bytes = static_cast<std::uint16_t>(h.expected_floats() * kFloatBytes);
  return h;
}

// Header followed by payload_bytes bytes of payload (a recognizable pattern), and the MAC
// trailer's bytes (the same pattern) when the header says it is authenticated.
std::vector<std::byte> datagram_for(const DataHeader& h) {
  std::vector<std::byte> d(kDataHeaderBytes + h.payload_bytes + h.trailer_bytes());
  encode_data_header(h, d);
  for (std::size_t i = kDataHeaderBytes; i < d.size(); ++i) {
    d[i] = static_cast<std::byte>(i * 7u);
  }
  return d;
}

RejectReason reject_of(std::span<const std::byte> d, const DataExpectations& e = expectations()) {
  const auto result = decode_data_packet(d, e);
  EXPECT_FALSE(result.has_value());
  return result.has_value() ? RejectReason::kCount : result.error();
}

void expect_same(const DataHeader& a, const DataHeader& b) {
  EXPECT_EQ(a.flags, b.flags);
  EXPECT_EQ(a.payload_bytes, b.payload_bytes);
  EXPECT_EQ(a.job_token, b.job_token);
  EXPECT_EQ(a.src_rank, b.src_rank);
  EXPECT_EQ(a.dst_rank, b.dst_rank);
  EXPECT_EQ(a.message_id, b.message_id);
  EXPECT_EQ(a.seq, b.seq);
  EXPECT_EQ(a.total_floats, b.total_floats);
  EXPECT_EQ(a.stride_floats, b.stride_floats);
  EXPECT_EQ(a.contributions, b.contributions);
  EXPECT_EQ(a.priority_class, b.priority_class);
  EXPECT_EQ(a.round, b.round);
  EXPECT_EQ(a.pair_seq, b.pair_seq);
}

std::uint8_t byte_at(std::span<const std::byte> d, std::size_t i) {
  return std::to_integer<std::uint8_t>(d[i]);
}

// ---------------------------------------------------------------------------------------------
// Byte order helpers

TEST(WireByteOrder, PutAndGetAreBigEndian) {
  std::array<std::byte, 15> buf{};
  put_u8(buf, 0, 0xA1);
  put_u16(buf, 1, 0xB1B2);
  put_u32(buf, 3, 0xC1C2C3C4u);
  put_u64(buf, 7, 0xD1D2D3D4D5D6D7D8ull);
  const std::array<std::uint8_t, 15> expected{0xA1, 0xB1, 0xB2, 0xC1, 0xC2, 0xC3, 0xC4, 0xD1,
                                              0xD2, 0xD3, 0xD4, 0xD5, 0xD6, 0xD7, 0xD8};
  for (std::size_t i = 0; i < buf.size(); ++i) EXPECT_EQ(byte_at(buf, i), expected[i]) << i;
  EXPECT_EQ(get_u8(buf, 0), 0xA1);
  EXPECT_EQ(get_u16(buf, 1), 0xB1B2);
  EXPECT_EQ(get_u32(buf, 3), 0xC1C2C3C4u);
  EXPECT_EQ(get_u64(buf, 7), 0xD1D2D3D4D5D6D7D8ull);
}

// ---------------------------------------------------------------------------------------------
// Geometry

TEST(WireDataGeometry, PacketCount) {
  EXPECT_EQ(packet_count(0, 360), 0u);
  EXPECT_EQ(packet_count(1, 360), 1u);
  EXPECT_EQ(packet_count(360, 360), 1u);
  EXPECT_EQ(packet_count(361, 360), 2u);
  EXPECT_EQ(packet_count(1000, 360), 3u);
  EXPECT_EQ(packet_count(100, 0), 0u);
  EXPECT_EQ(packet_count(std::numeric_limits<std::uint32_t>::max(), 1),
            std::numeric_limits<std::uint32_t>::max());
  EXPECT_EQ(packet_count(std::numeric_limits<std::uint32_t>::max(), 65535), 65537u);
  EXPECT_EQ(packet_count(std::numeric_limits<std::uint32_t>::max(), 65534), 65539u);
}

TEST(WireDataGeometry, ExpectedFloatsAndOffset) {
  DataHeader h = valid_header();  // 1000 floats, stride 360 -> 360, 360, 280
  EXPECT_EQ(h.packet_count(), 3u);
  EXPECT_EQ(h.expected_floats(), 360u);
  h.seq = 1;
  EXPECT_EQ(h.expected_floats(), 360u);
  EXPECT_EQ(h.offset_floats(), 360u);
  h.seq = 2;
  EXPECT_EQ(h.expected_floats(), 280u);
  EXPECT_EQ(h.offset_floats(), 720u);
  h.seq = 3;  // beyond the message
  EXPECT_EQ(h.expected_floats(), 0u);
  h.seq = 0;
  h.stride_floats = 0;
  EXPECT_EQ(h.expected_floats(), 0u);

  DataHeader big;
  big.total_floats = std::numeric_limits<std::uint32_t>::max();
  big.stride_floats = 65534;
  big.seq = 65538;  // last packet
  EXPECT_EQ(big.offset_floats(), 65538ull * 65534ull);
  EXPECT_EQ(big.expected_floats(), std::numeric_limits<std::uint32_t>::max() -
                                       static_cast<std::uint32_t>(65538u * 65534u));
}

TEST(WireDataGeometry, FlagAccessors) {
  DataHeader h;
  EXPECT_FALSE(h.is_protected());
  EXPECT_FALSE(h.is_retransmission());
  h.flags = data_flags::kProtected | data_flags::kRetransmission;
  EXPECT_TRUE(h.is_protected());
  EXPECT_TRUE(h.is_retransmission());
}

// ---------------------------------------------------------------------------------------------
// Golden layout

TEST(WireDataHeader, GoldenEncodingHasEveryFieldAtItsOffsetBigEndian) {
  DataHeader h;
  h.flags = 0x05;
  h.payload_bytes = 0x0102;
  h.job_token = 0x1112131415161718ull;
  h.src_rank = 0x2122;
  h.dst_rank = 0x2324;
  h.message_id = 0x3132333435363738ull;
  h.seq = 0x41424344u;
  h.total_floats = 0x51525354u;
  h.stride_floats = 0x6162;
  h.contributions = 0x7172;
  h.priority_class = 0x07;
  h.round = 0x81;
  h.pair_seq = 0x8182;
  std::array<std::byte, kDataHeaderBytes> out;
  out.fill(std::byte{0xEE});
  encode_data_header(h, out);
  const std::array<std::uint8_t, kDataHeaderBytes> golden{
      0x03, 0x05, 0x01, 0x02,                          // version, flags, payload_bytes
      0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18,  // job_token
      0x21, 0x22, 0x23, 0x24,                          // src_rank, dst_rank
      0x31, 0x32, 0x33, 0x34, 0x35, 0x36, 0x37, 0x38,  // message_id
      0x41, 0x42, 0x43, 0x44,                          // seq
      0x51, 0x52, 0x53, 0x54,                          // total_floats
      0x61, 0x62, 0x71, 0x72,                          // stride_floats, contributions
      0x07, 0x81, 0x81, 0x82,                          // priority, round, pair_seq
  };
  for (std::size_t i = 0; i < kDataHeaderBytes; ++i) {
    EXPECT_EQ(byte_at(out, i), golden[i]) << "offset " << i;
  }
}

TEST(WireDataHeader, EncodeWritesOnlyTheHeaderBytes) {
  std::array<std::byte, kDataHeaderBytes + 4> out;
  out.fill(std::byte{0xEE});
  encode_data_header(valid_header(), out);
  for (std::size_t i = kDataHeaderBytes; i < out.size(); ++i) EXPECT_EQ(byte_at(out, i), 0xEE);
}

TEST(WireDataHeader, GoldenDecodeFromHandWrittenBytes) {
  // 10 floats in stride 4: seq 2 is the short last packet with 2 floats (8 bytes).
  std::vector<std::uint8_t> raw{
      0x03, 0x03, 0x00, 0x08,                          // version 3, protected|retransmission, 8
      0x01, 0x23, 0x45, 0x67, 0x89, 0xAB, 0xCD, 0xEF,  // job token
      0x00, 0x03, 0x00, 0x01,                          // src 3, dst 1
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x02,  // message id 258
      0x00, 0x00, 0x00, 0x02,                          // seq 2
      0x00, 0x00, 0x00, 0x0A,                          // total 10
      0x00, 0x04, 0x00, 0x02,                          // stride 4, contributions 2
      0x06, 0x03, 0xFF, 0xFE,                          // priority 6, round 3, pair_seq 65534
      0x00, 0x00, 0x80, 0x3F, 0x00, 0x00, 0x00, 0xC0,  // 1.0f, -2.0f
  };
  std::vector<std::byte> d(raw.size());
  for (std::size_t i = 0; i < raw.size(); ++i) d[i] = static_cast<std::byte>(raw[i]);
  const auto result = decode_data_packet(d, expectations());
  ASSERT_TRUE(result.has_value()) << to_string(result.error());
  const DataHeader& h = *result;
  EXPECT_EQ(h.flags, data_flags::kProtected | data_flags::kRetransmission);
  EXPECT_EQ(h.payload_bytes, 8u);
  EXPECT_EQ(h.job_token, kJob);
  EXPECT_EQ(h.src_rank, 3u);
  EXPECT_EQ(h.dst_rank, 1u);
  EXPECT_EQ(h.message_id, 258u);
  EXPECT_EQ(h.seq, 2u);
  EXPECT_EQ(h.total_floats, 10u);
  EXPECT_EQ(h.stride_floats, 4u);
  EXPECT_EQ(h.contributions, 2u);
  EXPECT_EQ(h.priority_class, 6u);
  EXPECT_EQ(h.round, 3u);
  EXPECT_EQ(h.pair_seq, 65534u);
  std::array<float, 2> values{};
  load_floats(std::span<const std::byte>(d).subspan(kDataHeaderBytes, h.payload_bytes), values);
  EXPECT_EQ(values[0], 1.0f);
  EXPECT_EQ(values[1], -2.0f);
}

// ---------------------------------------------------------------------------------------------
// Round trips

TEST(WireDataHeader, RoundTripFirstPacket) {
  const DataHeader h = valid_header();
  const auto d = datagram_for(h);
  const auto result = decode_data_packet(d, expectations());
  ASSERT_TRUE(result.has_value()) << to_string(result.error());
  expect_same(*result, h);
}

TEST(WireDataHeader, RoundTripLastShortPacket) {
  DataHeader h = valid_header();
  h.seq = 2;  // 280 floats
  h.flags = data_flags::kAllKnown & ~data_flags::kParity;
  h.payload_bytes = static_cast<std::uint16_t>(280 * kFloatBytes);
  const auto d = datagram_for(h);
  EXPECT_EQ(d.size(), kDataHeaderBytes + 280 * kFloatBytes + kMacTrailerBytes);
  const auto result = decode_data_packet(d, mac_expectations());
  ASSERT_TRUE(result.has_value()) << to_string(result.error());
  expect_same(*result, h);
  EXPECT_EQ(result->expected_floats(), 280u);
}

TEST(WireDataHeader, RoundTripEdgeValues) {
  DataHeader h;
  h.flags = 0;
  h.job_token = std::numeric_limits<std::uint64_t>::max();
  h.src_rank = 65535;
  h.dst_rank = 0;
  h.message_id = std::numeric_limits<std::uint64_t>::max();
  h.total_floats = std::numeric_limits<std::uint32_t>::max();
  h.stride_floats = 1;
  h.seq = std::numeric_limits<std::uint32_t>::max() - 1;  // the last of 2^32 - 1 packets
  h.contributions = 65535;
  h.priority_class = kPriorityClasses - 1;
  h.round = 255;
  h.pair_seq = 65535;
  h.payload_bytes = 4;
  DataExpectations e;
  e.job_token = h.job_token;
  e.local_rank = 0;
  e.world_size = 65536;
  const auto d = datagram_for(h);
  const auto result = decode_data_packet(d, e);
  ASSERT_TRUE(result.has_value()) << to_string(result.error());
  expect_same(*result, h);
}

TEST(WireDataHeader, RoundTripLargestPayload) {
  // The largest stride whose payload still fits the u16 payload length: 16383 floats.
  DataHeader h = valid_header();
  h.stride_floats = 16383;
  h.total_floats = 16383 * 2;
  h.seq = 1;
  h.payload_bytes = 16383 * 4;
  const auto d = datagram_for(h);
  const auto result = decode_data_packet(d, expectations());
  ASSERT_TRUE(result.has_value()) << to_string(result.error());
  expect_same(*result, h);
}

TEST(WireDataHeader, SinglePacketMessage) {
  DataHeader h = valid_header();
  h.total_floats = 1;
  h.payload_bytes = 4;
  const auto result = decode_data_packet(datagram_for(h), expectations());
  ASSERT_TRUE(result.has_value()) << to_string(result.error());
  expect_same(*result, h);
}

// ---------------------------------------------------------------------------------------------
// One test per rejection reason of decode_data_packet

TEST(WireDataReject, TooShort) {
  const auto d = datagram_for(valid_header());
  for (std::size_t n = 0; n < kDataHeaderBytes; ++n) {
    EXPECT_EQ(reject_of(std::span<const std::byte>(d).first(n)), RejectReason::kTooShort) << n;
  }
}

TEST(WireDataReject, BadVersion) {
  for (const unsigned v : {0u, 2u, 4u, 255u}) {
    auto d = datagram_for(valid_header());
    d[0] = static_cast<std::byte>(v);
    EXPECT_EQ(reject_of(d), RejectReason::kBadVersion) << v;
  }
}

// A parity packet: seq = packet_count (3 here) + its group, a full packet's payload.
TEST(WireDataHeader, ParityPacketRoundTrips) {
  DataHeader h = valid_header();
  h.flags = data_flags::kProtected | data_flags::kParity;
  h.seq = 3 + 2;
  h.payload_bytes = static_cast<std::uint16_t>(360 * kFloatBytes);
  const auto result = decode_data_packet(datagram_for(h), expectations());
  ASSERT_TRUE(result.has_value()) << to_string(result.error());
  expect_same(*result, h);
  EXPECT_TRUE(result->is_parity());
  EXPECT_EQ(result->expected_floats(), 360u);
}

TEST(WireDataReject, ParityPacketOutsideItsRangeOrShort) {
  DataHeader h = valid_header();
  h.flags = data_flags::kProtected | data_flags::kParity;
  h.payload_bytes = static_cast<std::uint16_t>(360 * kFloatBytes);
  for (const std::uint32_t seq : {0u, 2u, 6u, 1000u}) {  // within the message, or >= 2 x count
    h.seq = seq;
    EXPECT_EQ(reject_of(datagram_for(h)), RejectReason::kBadGeometry) << seq;
  }
  h.seq = 3;
  h.payload_bytes = static_cast<std::uint16_t>(280 * kFloatBytes);  // not a full packet
  EXPECT_EQ(reject_of(datagram_for(h)), RejectReason::kBadPayloadLength);
  // Without the flag, a seq beyond the message is bad geometry as ever.
  h = valid_header();
  h.seq = 3;
  EXPECT_EQ(reject_of(datagram_for(h)), RejectReason::kBadGeometry);
}

TEST(WireDataReject, BadFlags) {
  // Bit 3 is the MAC flag, which this job does not use; bits 4-5 are the wire dtype; bit 6 is
  // parity (valid flags; WireDataHeader.Parity* test it).
  for (const unsigned bit : {3u, 7u}) {
    DataHeader h = valid_header();
    h.flags = static_cast<std::uint8_t>(data_flags::kProtected | (1u << bit));
    EXPECT_EQ(reject_of(datagram_for(h)), RejectReason::kBadFlags) << bit;
  }
  // Wire dtype 3 is none.
  auto d = datagram_for(valid_header());
  d[1] = static_cast<std::byte>(std::to_integer<unsigned>(d[1]) | 0x30u);
  EXPECT_EQ(reject_of(d), RejectReason::kBadFlags);
}

TEST(WireDataHeader, WireDtypeTravelsInFlagsBitsFourAndFive) {
  for (const WireDtype dtype : {WireDtype::kFloat32, WireDtype::kBfloat16, WireDtype::kFloat16}) {
    DataHeader h = valid_header();
    h.wire = dtype;
    h.payload_bytes = static_cast<std::uint16_t>(payload_bytes(dtype, h.expected_floats()));
    const auto d = datagram_for(h);
    EXPECT_EQ(std::to_integer<unsigned>(d[1]),
              data_flags::kProtected | (static_cast<unsigned>(dtype) << 4));
    const auto result = decode_data_packet(d, expectations());
    ASSERT_TRUE(result.has_value()) << to_string(result.error());
    EXPECT_EQ(result->wire, dtype);
    EXPECT_EQ(result->flags, data_flags::kProtected);
  }
}

TEST(WireDataReject, PayloadLengthFollowsTheWireDtype) {
  // 360 values: 1440 bytes as fp32, 720 as bf16, 722 as fp16 (its scale exponent first).
  for (const auto& [dtype, bytes] : {std::pair{WireDtype::kFloat32, 1440},
                                     {WireDtype::kBfloat16, 720},
                                     {WireDtype::kFloat16, 722}}) {
    for (const WireDtype other : {WireDtype::kFloat32, WireDtype::kBfloat16, WireDtype::kFloat16}) {
      DataHeader h = valid_header();
      h.wire = other;
      h.payload_bytes = static_cast<std::uint16_t>(bytes);
      const auto d = datagram_for(h);
      const auto result = decode_data_packet(d, expectations());
      EXPECT_EQ(result.has_value(), other == dtype) << to_string(dtype) << " " << to_string(other);
      if (!result.has_value()) {
        EXPECT_EQ(result.error(), RejectReason::kBadPayloadLength);
      }
    }
  }
}

TEST(WireDataReject, MacTrailerMustMatchTheJob) {
  // A job with packet MACs refuses a packet without one, after the job token check.
  EXPECT_EQ(reject_of(datagram_for(valid_header()), mac_expectations()), RejectReason::kMissingMac);
  DataHeader other_job = valid_header();
  other_job.job_token = kJob + 1;
  EXPECT_EQ(reject_of(datagram_for(other_job), mac_expectations()), RejectReason::kWrongJob);
  // A job without them does not know the flag.
  DataHeader authenticated = valid_header();
  authenticated.flags |= data_flags::kAuthenticated;
  EXPECT_EQ(reject_of(datagram_for(authenticated)), RejectReason::kBadFlags);
  // With it, the datagram must hold the whole trailer, no more and no less.
  auto d = datagram_for(authenticated);
  ASSERT_TRUE(decode_data_packet(d, mac_expectations()).has_value());
  d.pop_back();
  EXPECT_EQ(reject_of(d, mac_expectations()), RejectReason::kBadPayloadLength);
  d.resize(d.size() + 2);
  EXPECT_EQ(reject_of(d, mac_expectations()), RejectReason::kBadPayloadLength);
}

TEST(WireDataHeader, MacTrailerGoldenAndRoundTrip) {
  MacTrailer trailer;
  trailer.counter = 0x0102030405060708ull;
  for (std::size_t i = 0; i < kMacTagBytes; ++i)
    trailer.tag[i] = static_cast<std::uint8_t>(0xA0 + i);
  std::vector<std::byte> out(kMacTrailerBytes);
  encode_mac_trailer(trailer, out);
  for (std::size_t i = 0; i < 8; ++i) EXPECT_EQ(byte_at(out, i), i + 1) << i;
  for (std::size_t i = 0; i < kMacTagBytes; ++i) EXPECT_EQ(byte_at(out, 8 + i), 0xA0 + i) << i;
  const MacTrailer back = decode_mac_trailer(out);
  EXPECT_EQ(back.counter, trailer.counter);
  EXPECT_EQ(back.tag, trailer.tag);
}

TEST(WireDataReject, VersionOneIsRefused) {
  // Version 1 had no pair_seq (bytes 38-39 were zero): its senders' losses would go unseen.
  auto d = datagram_for(valid_header());
  d[0] = std::byte{1};
  EXPECT_EQ(reject_of(d), RejectReason::kBadVersion);
}

TEST(WireDataReject, WrongJob) {
  DataHeader h = valid_header();
  h.job_token = kJob ^ 1;
  EXPECT_EQ(reject_of(datagram_for(h)), RejectReason::kWrongJob);
  h.job_token = 0;
  EXPECT_EQ(reject_of(datagram_for(h)), RejectReason::kWrongJob);
}

TEST(WireDataReject, WrongDestination) {
  DataHeader h = valid_header();
  h.dst_rank = 3;
  EXPECT_EQ(reject_of(datagram_for(h)), RejectReason::kWrongDestination);
  h.dst_rank = 0x0100 | 1;  // differs only in the high byte
  EXPECT_EQ(reject_of(datagram_for(h)), RejectReason::kWrongDestination);
}

TEST(WireDataReject, BadSourceRank) {
  DataHeader h = valid_header();
  h.src_rank = 4;  // == world_size
  EXPECT_EQ(reject_of(datagram_for(h)), RejectReason::kBadSourceRank);
  h.src_rank = 65535;
  EXPECT_EQ(reject_of(datagram_for(h)), RejectReason::kBadSourceRank);
  h.src_rank = 1;  // our own rank
  EXPECT_EQ(reject_of(datagram_for(h)), RejectReason::kBadSourceRank);
  h.src_rank = 3;  // the highest valid rank is accepted
  EXPECT_TRUE(decode_data_packet(datagram_for(h), expectations()).has_value());
}

TEST(WireDataReject, BadPriority) {
  DataHeader h = valid_header();
  h.priority_class = kPriorityClasses;
  EXPECT_EQ(reject_of(datagram_for(h)), RejectReason::kBadPriority);
  h.priority_class = 255;
  EXPECT_EQ(reject_of(datagram_for(h)), RejectReason::kBadPriority);
}

TEST(WireDataReject, BadContributions) {
  DataHeader h = valid_header();
  h.contributions = 0;
  EXPECT_EQ(reject_of(datagram_for(h)), RejectReason::kBadContributions) << "zero";
  h.contributions = 5;  // world of 4
  EXPECT_EQ(reject_of(datagram_for(h)), RejectReason::kBadContributions) << "above the world";
  h.contributions = 4;
  EXPECT_TRUE(decode_data_packet(datagram_for(h), expectations()).has_value()) << "the world";
}

TEST(WireDataReject, BadGeometry) {
  DataHeader h = valid_header();
  h.stride_floats = 0;
  EXPECT_EQ(reject_of(datagram_for(h)), RejectReason::kBadGeometry) << "stride 0";
  h = valid_header();
  h.total_floats = 0;
  EXPECT_EQ(reject_of(datagram_for(h)), RejectReason::kBadGeometry) << "total 0";
  h = valid_header();
  h.seq = 3;  // == packet count
  EXPECT_EQ(reject_of(datagram_for(h)), RejectReason::kBadGeometry) << "seq == count";
  h.seq = std::numeric_limits<std::uint32_t>::max();
  EXPECT_EQ(reject_of(datagram_for(h)), RejectReason::kBadGeometry) << "seq max";
}

TEST(WireDataReject, BadPayloadLength) {
  // payload_bytes larger than what the datagram carries.
  auto d = datagram_for(valid_header());
  d.pop_back();
  EXPECT_EQ(reject_of(d), RejectReason::kBadPayloadLength) << "datagram short by one";
  // Trailing bytes after the payload.
  d = datagram_for(valid_header());
  d.push_back(std::byte{0});
  EXPECT_EQ(reject_of(d), RejectReason::kBadPayloadLength) << "trailing byte";
  // Consistent with the datagram, but not with the geometry (a full packet at the last seq).
  DataHeader h = valid_header();
  h.seq = 2;
  EXPECT_EQ(reject_of(datagram_for(h)), RejectReason::kBadPayloadLength) << "last too long";
  // A short payload in a middle packet.
  h = valid_header();
  h.payload_bytes = 280 * 4;
  EXPECT_EQ(reject_of(datagram_for(h)), RejectReason::kBadPayloadLength) << "middle short";
  // Not whole floats.
  h = valid_header();
  h.payload_bytes = static_cast<std::uint16_t>(h.payload_bytes - 2);
  EXPECT_EQ(reject_of(datagram_for(h)), RejectReason::kBadPayloadLength) << "partial float";
  // A header with no payload at all.
  h = valid_header();
  h.payload_bytes = 0;
  EXPECT_EQ(reject_of(datagram_for(h)), RejectReason::kBadPayloadLength) << "empty";
  // A stride whose full packet cannot be described by a u16 payload length.
  h = valid_header();
  h.stride_floats = 16384;
  h.total_floats = 16384 * 2;
  h.payload_bytes = 0;  // 16384 * 4 wraps to 0
  EXPECT_EQ(reject_of(datagram_for(h)), RejectReason::kBadPayloadLength) << "u16 wrap";
}

TEST(WireDataReject, ChecksRunInTheDocumentedOrder) {
  // Start from a datagram that violates every rule, then fix one rule at a time: each step must
  // report the next reason in the documented order.
  DataHeader h = valid_header();
  h.job_token = 0;
  h.dst_rank = 9;
  h.src_rank = 9;
  h.priority_class = 9;
  h.stride_floats = 0;
  h.payload_bytes = 12;
  auto d = datagram_for(h);
  d[0] = std::byte{9};
  d[1] = std::byte{0xFF};  // every flag, known or not
  d.push_back(std::byte{0});

  EXPECT_EQ(reject_of(std::span<const std::byte>(d).first(10)), RejectReason::kTooShort);
  EXPECT_EQ(reject_of(d), RejectReason::kBadVersion);
  d[0] = std::byte{kProtocolVersion};
  EXPECT_EQ(reject_of(d), RejectReason::kBadFlags);
  d[1] = std::byte{data_flags::kLastOfRound};
  EXPECT_EQ(reject_of(d), RejectReason::kWrongJob);
  put_u64(d, 4, kJob);
  EXPECT_EQ(reject_of(d, mac_expectations()), RejectReason::kMissingMac);
  EXPECT_EQ(reject_of(d), RejectReason::kWrongDestination);
  put_u16(d, 14, 1);
  EXPECT_EQ(reject_of(d), RejectReason::kBadSourceRank);
  put_u16(d, 12, 0);
  EXPECT_EQ(reject_of(d), RejectReason::kBadPriority);
  put_u8(d, 36, 7);
  EXPECT_EQ(reject_of(d), RejectReason::kBadGeometry);
  put_u16(d, 32, 3);  // stride 3 of 1000 floats: seq 0 carries 3 floats = 12 bytes
  EXPECT_EQ(reject_of(d), RejectReason::kBadPayloadLength);
  d.pop_back();
  EXPECT_TRUE(decode_data_packet(d, expectations()).has_value());
}

// ---------------------------------------------------------------------------------------------
// Floats

std::uint32_t bits_of(float f) {
  return std::bit_cast<std::uint32_t>(f);
}

TEST(WireFloats, RoundTripIsBitExact) {
  const std::vector<std::uint32_t> patterns{
      0x00000000u,  // +0.0
      0x80000000u,  // -0.0
      0x3F800000u,  // 1.0
      0xC0000000u,  // -2.0
      0x7F800000u,  // +inf
      0xFF800000u,  // -inf
      0x7FC00000u,  // quiet NaN
      0x7FC12345u,  // quiet NaN with payload
      0xFFFFFFFFu,  // negative NaN, all payload bits
      0x7F800001u,  // signalling NaN
      0x00000001u,  // smallest subnormal
      0x807FFFFFu,  // largest negative subnormal
      0x7F7FFFFFu,  // FLT_MAX
      0x12345678u,
  };
  std::vector<float> src(patterns.size());
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = std::bit_cast<float>(patterns[i]);
  std::vector<std::byte> wire(src.size() * kFloatBytes);
  store_floats(src, wire);
  std::vector<float> back(src.size());
  load_floats(wire, back);
  for (std::size_t i = 0; i < src.size(); ++i) {
    EXPECT_EQ(bits_of(back[i]), patterns[i]) << std::hex << patterns[i];
  }
  EXPECT_TRUE(std::signbit(back[1]));
  EXPECT_TRUE(std::isnan(back[7]));
}

TEST(WireFloats, WireIsLittleEndianBinary32) {
  const std::array<float, 2> src{1.0f, std::bit_cast<float>(0x7FC12345u)};
  std::array<std::byte, 8> wire{};
  store_floats(src, wire);
  const std::array<std::uint8_t, 8> golden{0x00, 0x00, 0x80, 0x3F, 0x45, 0x23, 0xC1, 0x7F};
  for (std::size_t i = 0; i < wire.size(); ++i) EXPECT_EQ(byte_at(wire, i), golden[i]) << i;
}

TEST(WireFloats, CopiesOnlyTheRequestedCount) {
  const std::array<float, 1> src{3.5f};
  std::array<std::byte, 8> wire;
  wire.fill(std::byte{0xAA});
  store_floats(src, wire);
  for (std::size_t i = 4; i < wire.size(); ++i) EXPECT_EQ(byte_at(wire, i), 0xAA);
  std::array<float, 0> none{};
  load_floats(wire, none);
  store_floats(none, wire);
}

// ---------------------------------------------------------------------------------------------
// Reject reasons and counters

TEST(WireRejectReason, EveryReasonHasADistinctName) {
  std::set<std::string> names;
  for (std::size_t i = 0; i < kRejectReasonCount; ++i) {
    const std::string_view name = to_string(static_cast<RejectReason>(i));
    EXPECT_FALSE(name.empty());
    EXPECT_NE(name, "unknown") << i;
    names.insert(std::string(name));
  }
  EXPECT_EQ(names.size(), kRejectReasonCount);
  EXPECT_EQ(to_string(RejectReason::kTooShort), "too_short");
  EXPECT_EQ(to_string(RejectReason::kBadControlField), "bad_control_field");
  EXPECT_EQ(to_string(RejectReason::kCount), "unknown");
  EXPECT_EQ(to_string(static_cast<RejectReason>(200)), "unknown");
}

TEST(WireRejectReason, CountersAddAndTotal) {
  RejectCounters a;
  EXPECT_EQ(a.total(), 0u);
  a.add(RejectReason::kDuplicate);
  a.add(RejectReason::kDuplicate);
  a.add(RejectReason::kWrongJob);
  EXPECT_EQ(a.get(RejectReason::kDuplicate), 2u);
  EXPECT_EQ(a.get(RejectReason::kWrongJob), 1u);
  EXPECT_EQ(a.total(), 3u);

  RejectCounters b;
  b.add(RejectReason::kWrongJob);
  b.add(RejectReason::kBadControlField);
  b.by_reason[static_cast<std::size_t>(RejectReason::kTooShort)] =
      std::numeric_limits<std::uint32_t>::max() + std::uint64_t{5};
  RejectCounters& result = (a += b);
  EXPECT_EQ(&result, &a);
  EXPECT_EQ(a.get(RejectReason::kDuplicate), 2u);
  EXPECT_EQ(a.get(RejectReason::kWrongJob), 2u);
  EXPECT_EQ(a.get(RejectReason::kBadControlField), 1u);
  EXPECT_EQ(a.get(RejectReason::kTooShort), std::numeric_limits<std::uint32_t>::max() + 5ull);
  EXPECT_EQ(a.total(), 5ull + std::numeric_limits<std::uint32_t>::max() + 5ull);
  EXPECT_EQ(b.total(), 2ull + std::numeric_limits<std::uint32_t>::max() + 5ull);
}

}  // namespace
}  // namespace dlcp::wire

namespace dlcp::wire {
namespace {

TEST(PacketFloats, FullPacketsThenTheRemainderThenNothing) {
  // 1000 floats at stride 358: packets of 358, 358 and 284.
  EXPECT_EQ(packet_count(1000, 358), 3u);
  EXPECT_EQ(packet_floats(1000, 358, 0), 358u);
  EXPECT_EQ(packet_floats(1000, 358, 1), 358u);
  EXPECT_EQ(packet_floats(1000, 358, 2), 284u);
  EXPECT_EQ(packet_floats(1000, 358, 3), 0u);
  EXPECT_EQ(packet_floats(716, 358, 1), 358u);  // exact multiple: last packet is full
  EXPECT_EQ(packet_floats(1000, 0, 0), 0u);
  // Near the top of the range the offset must not overflow 32 bits.
  EXPECT_EQ(packet_floats(0xFFFFFFFFu, 0xFFFF, 65537), 0xFFFFFFFFu - 65537ull * 0xFFFF);
}

}  // namespace
}  // namespace dlcp::wire
