// A data packet's payload: its values in the packet's wire dtype (dlcp::WireDtype), and the
// conversions between float32 and the 16-bit dtypes. Every conversion rounds to nearest even.
//
// Payload layouts (little-endian, like the float32 payload):
//   fp32  n x binary32
//   bf16  n x bfloat16 (the upper half of the value's binary32)
//   fp16  i16 scale exponent k, then n x binary16 holding value * 2^k. The sender picks
//         k = 15 - ceil(log2(m)) for the packet's largest finite magnitude m (k = 0 when m = 0),
//         clamped to [-113, 127], so that m * 2^k lands in (2^14, 2^15]: nothing overflows
//         binary16's 65504 and a packet of small gradients keeps 11 significant bits instead of
//         falling into binary16's subnormals. The receiver reads value = binary16 * 2^-k.
// Decoding what was encoded and encoding it again gives the same bytes, so a value rounded once
// (round_to_wire) travels unchanged.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "dlcp/options.hpp"

namespace dlcp::wire {

inline constexpr std::size_t kScaleExponentBytes = 2;  // fp16 payloads' leading i16

// Bytes of a payload of `count` values.
std::size_t payload_bytes(WireDtype dtype, std::size_t count);

// Values a payload of at most `bytes` bytes holds.
std::size_t values_fitting(WireDtype dtype, std::size_t bytes);

// Values per packet in `dtype` for packets that hold `float32_values` float32 values, at most
// 65535 (the header's stride field).
std::uint16_t packet_values(WireDtype dtype, std::uint16_t float32_values);

// Writes values as one packet's payload: out.size() must be payload_bytes(dtype, values.size()).
void encode_values(std::span<const float> values, WireDtype dtype, std::span<std::byte> out);

// Reads one packet's payload into out; payload.size() must be payload_bytes(dtype, out.size()).
void decode_values(std::span<const std::byte> payload, WireDtype dtype, std::span<float> out);

// Rounds values in place to what they become on the wire, for packets of `packet` values cut from
// the span's start (fp16's scale is per packet): decode(encode(values)).
void round_to_wire(std::span<float> values, WireDtype dtype, std::size_t packet);

std::uint16_t float_to_bfloat16(float value);
float bfloat16_to_float(std::uint16_t bits);
std::uint16_t float_to_float16(float value);
float float16_to_float(std::uint16_t bits);

// fp16's scale exponent k for a packet whose largest finite magnitude is `max_magnitude`.
int float16_scale_exponent(float max_magnitude);

// Whether this CPU converts binary16 in hardware (x86 F16C with AVX); checked once. The fp16
// conversions here use it (conversion_path.hpp), and so does the Gloo fp16 baseline, lest slow
// arithmetic flatter us.
bool cpu_has_f16c();

}  // namespace dlcp::wire
