// libFuzzer target for decode_data_packet. The input is one datagram. It is decoded against fixed
// expectations (those of the seed corpus, with and without packet MACs) and against expectations
// taken from the datagram itself, so that the fuzzer also reaches the geometry checks without
// guessing the job token. An accepted parity packet must sit beyond the message's packets with a
// full packet's payload. Every accepted datagram must re-encode to exactly the same header (and
// MAC trailer) bytes and decode to the same values. A float32 payload must survive a load/store
// round trip bit for bit; a 16-bit payload's values, rounded to the wire once, must travel
// unchanged (the rule the collectives rely on).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>

#include "wire/byte_order.hpp"
#include "wire/data_header.hpp"
#include "wire/values.hpp"

namespace {

using namespace dlcp::wire;

void check(bool ok) {
  if (!ok) std::abort();
}

bool same(const DataHeader& a, const DataHeader& b) {
  return a.flags == b.flags && a.wire == b.wire && a.payload_bytes == b.payload_bytes &&
         a.job_token == b.job_token && a.src_rank == b.src_rank && a.dst_rank == b.dst_rank &&
         a.message_id == b.message_id && a.seq == b.seq && a.total_floats == b.total_floats &&
         a.stride_floats == b.stride_floats && a.contributions == b.contributions &&
         a.priority_class == b.priority_class && a.round == b.round && a.pair_seq == b.pair_seq;
}

// Values whose packet is not vanishingly small (below 2^-100 fp16's scale would leave float32's
// normal range on the way back) and finite.
void check_rounded_values_travel_unchanged(std::vector<float> values, dlcp::WireDtype dtype) {
  float largest = 0;
  for (float& v : values) {
    if (!std::isfinite(v)) v = 0;
    largest = std::max(largest, std::abs(v));
  }
  if (largest != 0 && largest < 0x1p-100f) return;
  round_to_wire(values, dtype, values.size());
  std::vector<std::byte> bytes(payload_bytes(dtype, values.size()));
  encode_values(values, dtype, bytes);
  std::vector<float> back(values.size());
  decode_values(bytes, dtype, back);
  check(values.empty() || std::memcmp(back.data(), values.data(), values.size() * 4) == 0);
}

void decode_and_round_trip(std::span<const std::byte> datagram, const DataExpectations& expect) {
  const auto decoded = decode_data_packet(datagram, expect);
  if (!decoded) {
    check(decoded.error() < RejectReason::kCount);
    return;
  }
  const DataHeader& h = *decoded;
  check(h.is_authenticated() == expect.packet_mac);
  check(datagram.size() == kDataHeaderBytes + h.payload_bytes + h.trailer_bytes());
  check(h.payload_bytes == payload_bytes(h.wire, h.expected_floats()));
  if (h.is_parity()) {
    // A parity packet's seq is packet_count + its group, and its payload a full packet's.
    check(h.seq >= h.packet_count() && h.seq < 2 * std::uint64_t{h.packet_count()});
    check(h.expected_floats() == h.stride_floats);
  } else {
    check(h.offset_floats() + h.expected_floats() <= h.total_floats);
  }

  std::vector<std::byte> again(datagram.size());
  encode_data_header(h, again);
  check(std::memcmp(again.data(), datagram.data(), kDataHeaderBytes) == 0);

  const auto payload = datagram.subspan(kDataHeaderBytes, h.payload_bytes);
  std::vector<float> values(h.expected_floats());
  decode_values(payload, h.wire, values);
  if (h.wire == dlcp::WireDtype::kFloat32) {
    store_floats(values, std::span<std::byte>(again).subspan(kDataHeaderBytes));
    check(payload.empty() ||
          std::memcmp(again.data() + kDataHeaderBytes, payload.data(), payload.size()) == 0);
  } else {
    check_rounded_values_travel_unchanged(values, h.wire);
    std::memcpy(again.data() + kDataHeaderBytes, payload.data(), payload.size());
  }

  if (h.is_authenticated()) {
    const auto trailer = datagram.subspan(kDataHeaderBytes + h.payload_bytes);
    encode_mac_trailer(decode_mac_trailer(trailer),
                       std::span<std::byte>(again).subspan(kDataHeaderBytes + h.payload_bytes));
    check(std::memcmp(again.data() + kDataHeaderBytes + h.payload_bytes, trailer.data(),
                      kMacTrailerBytes) == 0);
  }

  const auto redecoded = decode_data_packet(again, expect);
  check(redecoded.has_value());
  check(same(*redecoded, h));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::byte> datagram(reinterpret_cast<const std::byte*>(data), size);

  DataExpectations fixed;
  fixed.job_token = 0x0123456789ABCDEFull;
  fixed.local_rank = 1;
  fixed.world_size = 4;
  decode_and_round_trip(datagram, fixed);
  fixed.packet_mac = true;
  decode_and_round_trip(datagram, fixed);

  if (size >= kDataHeaderBytes) {
    DataExpectations self;
    self.job_token = get_u64(datagram, 4);
    self.local_rank = get_u16(datagram, 14);
    self.world_size = 65536;
    self.packet_mac = (get_u8(datagram, 1) & data_flags::kAuthenticated) != 0;
    decode_and_round_trip(datagram, self);
  }
  return 0;
}
