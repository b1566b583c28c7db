#include "wire/data_header.hpp"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cstring>

#include "wire/byte_order.hpp"
#include "wire/values.hpp"

namespace dlcp::wire {

namespace {

// Byte offsets of the header fields; see the layout in data_header.hpp.
constexpr std::size_t kOffVersion = 0;
constexpr std::size_t kOffFlags = 1;
constexpr std::size_t kOffPayloadBytes = 2;
constexpr std::size_t kOffJobToken = 4;
constexpr std::size_t kOffSrcRank = 12;
constexpr std::size_t kOffDstRank = 14;
constexpr std::size_t kOffMessageId = 16;
constexpr std::size_t kOffSeq = 24;
constexpr std::size_t kOffTotalFloats = 28;
constexpr std::size_t kOffStrideFloats = 32;
constexpr std::size_t kOffContributions = 34;
constexpr std::size_t kOffPriorityClass = 36;
constexpr std::size_t kOffRound = 37;
constexpr std::size_t kOffPairSeq = 38;
static_assert(kOffPairSeq + 2 == kDataHeaderBytes);

// The flags byte's bits 4-5 carry the wire dtype.
constexpr unsigned kWireShift = 4;
constexpr std::uint8_t kWireMask = 0x30;
static_assert((data_flags::kAllKnown & kWireMask) == 0);

[[maybe_unused]] constexpr std::uint32_t byte_swap32(std::uint32_t v) {
  return ((v & 0x000000FFu) << 24) | ((v & 0x0000FF00u) << 8) | ((v & 0x00FF0000u) >> 8) |
         ((v & 0xFF000000u) >> 24);
}

}  // namespace

std::uint32_t packet_count(std::uint32_t total_floats, std::uint16_t stride_floats) {
  if (stride_floats == 0) return 0;
  // Written without total + stride - 1 so that it cannot overflow near UINT32_MAX.
  return total_floats / stride_floats + (total_floats % stride_floats != 0 ? 1u : 0u);
}

std::uint32_t DataHeader::packet_count() const {
  return wire::packet_count(total_floats, stride_floats);
}

std::uint32_t packet_floats(std::uint32_t total_floats, std::uint16_t stride_floats,
                            std::uint32_t seq) {
  const std::uint32_t count = packet_count(total_floats, stride_floats);
  if (count == 0 || seq >= count) return 0;
  if (seq + 1 < count) return stride_floats;
  // Last packet: whatever remains (between 1 and stride_floats floats).
  return static_cast<std::uint32_t>(std::uint64_t{total_floats} -
                                    std::uint64_t{seq} * stride_floats);
}

std::uint32_t DataHeader::expected_floats() const {
  if (is_parity()) return stride_floats;
  return packet_floats(total_floats, stride_floats, seq);
}

void encode_data_header(const DataHeader& header, std::span<std::byte> out) {
  assert(out.size() >= kDataHeaderBytes);
  put_u8(out, kOffVersion, kProtocolVersion);
  put_u8(
      out, kOffFlags,
      static_cast<std::uint8_t>(header.flags | (static_cast<unsigned>(header.wire) << kWireShift)));
  put_u16(out, kOffPayloadBytes, header.payload_bytes);
  put_u64(out, kOffJobToken, header.job_token);
  put_u16(out, kOffSrcRank, header.src_rank);
  put_u16(out, kOffDstRank, header.dst_rank);
  put_u64(out, kOffMessageId, header.message_id);
  put_u32(out, kOffSeq, header.seq);
  put_u32(out, kOffTotalFloats, header.total_floats);
  put_u16(out, kOffStrideFloats, header.stride_floats);
  put_u16(out, kOffContributions, header.contributions);
  put_u8(out, kOffPriorityClass, header.priority_class);
  put_u8(out, kOffRound, header.round);
  put_u16(out, kOffPairSeq, header.pair_seq);
}

Expected<DataHeader, RejectReason> decode_data_packet(std::span<const std::byte> datagram,
                                                      const DataExpectations& expect) {
  return decode_data_header(datagram.first(std::min(datagram.size(), kDataHeaderBytes)),
                            datagram.size(), expect);
}

Expected<DataHeader, RejectReason> decode_data_header(std::span<const std::byte> datagram,
                                                      std::size_t datagram_size,
                                                      const DataExpectations& expect) {
  if (datagram_size < kDataHeaderBytes || datagram.size() < kDataHeaderBytes) {
    return unexpected(RejectReason::kTooShort);
  }
  if (get_u8(datagram, kOffVersion) != kProtocolVersion) {
    return unexpected(RejectReason::kBadVersion);
  }

  DataHeader h;
  const std::uint8_t flags = get_u8(datagram, kOffFlags);
  h.flags = static_cast<std::uint8_t>(flags & ~kWireMask);
  if ((h.flags & ~data_flags::kAllKnown) != 0) return unexpected(RejectReason::kBadFlags);
  const unsigned wire = (flags & kWireMask) >> kWireShift;
  if (wire > static_cast<unsigned>(WireDtype::kFloat16)) return unexpected(RejectReason::kBadFlags);
  h.wire = static_cast<WireDtype>(wire);

  h.job_token = get_u64(datagram, kOffJobToken);
  if (h.job_token != expect.job_token) return unexpected(RejectReason::kWrongJob);
  if (h.is_authenticated() != expect.packet_mac) {
    return unexpected(expect.packet_mac ? RejectReason::kMissingMac : RejectReason::kBadFlags);
  }

  h.dst_rank = get_u16(datagram, kOffDstRank);
  if (h.dst_rank != expect.local_rank) return unexpected(RejectReason::kWrongDestination);

  h.src_rank = get_u16(datagram, kOffSrcRank);
  if (h.src_rank >= expect.world_size || h.src_rank == expect.local_rank) {
    return unexpected(RejectReason::kBadSourceRank);
  }

  h.priority_class = get_u8(datagram, kOffPriorityClass);
  if (h.priority_class >= kPriorityClasses) return unexpected(RejectReason::kBadPriority);

  h.seq = get_u32(datagram, kOffSeq);
  h.total_floats = get_u32(datagram, kOffTotalFloats);
  h.stride_floats = get_u16(datagram, kOffStrideFloats);
  if (h.stride_floats == 0 || h.total_floats == 0) return unexpected(RejectReason::kBadGeometry);
  // A parity packet's seq is packet_count + its group, and there are fewer groups than packets.
  const std::uint64_t count = h.packet_count();
  if (h.is_parity() ? (h.seq < count || h.seq >= 2 * count) : h.seq >= count) {
    return unexpected(RejectReason::kBadGeometry);
  }

  h.payload_bytes = get_u16(datagram, kOffPayloadBytes);
  const std::uint64_t expected_bytes = payload_bytes(h.wire, h.expected_floats());
  if (std::uint64_t{h.payload_bytes} + h.trailer_bytes() != datagram_size - kDataHeaderBytes ||
      h.payload_bytes != expected_bytes) {
    return unexpected(RejectReason::kBadPayloadLength);
  }

  h.message_id = get_u64(datagram, kOffMessageId);
  // A forged count would bias every average it enters, so it is bounded by the world.
  h.contributions = get_u16(datagram, kOffContributions);
  if (h.contributions == 0 || h.contributions > expect.world_size) {
    return unexpected(RejectReason::kBadContributions);
  }
  h.round = get_u8(datagram, kOffRound);
  h.pair_seq = get_u16(datagram, kOffPairSeq);
  return h;
}

void encode_mac_trailer(const MacTrailer& trailer, std::span<std::byte> out) {
  assert(out.size() >= kMacTrailerBytes);
  put_u64(out, 0, trailer.counter);
  for (std::size_t i = 0; i < kMacTagBytes; ++i) put_u8(out, 8 + i, trailer.tag[i]);
}

MacTrailer decode_mac_trailer(std::span<const std::byte> in) {
  assert(in.size() >= kMacTrailerBytes);
  MacTrailer trailer;
  trailer.counter = get_u64(in, 0);
  for (std::size_t i = 0; i < kMacTagBytes; ++i) trailer.tag[i] = get_u8(in, 8 + i);
  return trailer;
}

void load_floats(std::span<const std::byte> wire, std::span<float> dst) {
  assert(wire.size() >= dst.size() * kFloatBytes);
  if (dst.empty()) return;
  if constexpr (std::endian::native == std::endian::little) {
    std::memcpy(dst.data(), wire.data(), dst.size() * kFloatBytes);
  } else {
    for (std::size_t i = 0; i < dst.size(); ++i) {
      std::uint32_t bits = 0;
      std::memcpy(&bits, wire.data() + i * kFloatBytes, kFloatBytes);
      dst[i] = std::bit_cast<float>(byte_swap32(bits));
    }
  }
}

void store_floats(std::span<const float> src, std::span<std::byte> wire) {
  assert(wire.size() >= src.size() * kFloatBytes);
  if (src.empty()) return;
  if constexpr (std::endian::native == std::endian::little) {
    std::memcpy(wire.data(), src.data(), src.size() * kFloatBytes);
  } else {
    for (std::size_t i = 0; i < src.size(); ++i) {
      const std::uint32_t bits = byte_swap32(std::bit_cast<std::uint32_t>(src[i]));
      std::memcpy(wire.data() + i * kFloatBytes, &bits, kFloatBytes);
    }
  }
}

}  // namespace dlcp::wire
