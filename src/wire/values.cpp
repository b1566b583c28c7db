#include "wire/values.hpp"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cmath>

#include "wire/data_header.hpp"

namespace dlcp::wire {
namespace {

constexpr std::uint32_t kAbsMask = 0x7FFFFFFFu;
constexpr std::uint32_t kInfinityBits = 0x7F800000u;
constexpr int kMinScaleExponent = -113;  // a packet of magnitudes near FLT_MAX
constexpr int kMaxScaleExponent = 127;   // 2^127, the largest power of two a float holds

void store_le16(std::byte* out, std::uint16_t v) {
  out[0] = static_cast<std::byte>(v & 0xFFu);
  out[1] = static_cast<std::byte>(v >> 8);
}

std::uint16_t load_le16(const std::byte* in) {
  return static_cast<std::uint16_t>(std::to_integer<unsigned>(in[0]) |
                                    (std::to_integer<unsigned>(in[1]) << 8));
}

// The largest finite magnitude among values (infinities and NaNs travel as themselves).
float max_finite_magnitude(std::span<const float> values) {
  std::uint32_t max_bits = 0;
  for (const float v : values) {
    const std::uint32_t bits = std::bit_cast<std::uint32_t>(v) & kAbsMask;
    max_bits = bits < kInfinityBits ? std::max(max_bits, bits) : max_bits;
  }
  return std::bit_cast<float>(max_bits);
}

// 2^e for e within [-149, 127], exactly.
float power_of_two(int e) {
  return std::ldexp(1.0f, e);
}

}  // namespace

std::size_t payload_bytes(WireDtype dtype, std::size_t count) {
  switch (dtype) {
    case WireDtype::kBfloat16:
      return 2 * count;
    case WireDtype::kFloat16:
      return kScaleExponentBytes + 2 * count;
    case WireDtype::kFloat32:
      break;
  }
  return kFloatBytes * count;
}

std::size_t values_fitting(WireDtype dtype, std::size_t bytes) {
  switch (dtype) {
    case WireDtype::kBfloat16:
      return bytes / 2;
    case WireDtype::kFloat16:
      return bytes < kScaleExponentBytes ? 0 : (bytes - kScaleExponentBytes) / 2;
    case WireDtype::kFloat32:
      break;
  }
  return bytes / kFloatBytes;
}

std::uint16_t packet_values(WireDtype dtype, std::uint16_t float32_values) {
  const std::size_t fits =
      values_fitting(dtype, payload_bytes(WireDtype::kFloat32, float32_values));
  return static_cast<std::uint16_t>(std::min<std::size_t>(fits, 0xFFFF));
}

std::uint16_t float_to_bfloat16(float value) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  // A NaN stays a NaN (quiet), whatever its payload: rounding could carry it into infinity.
  if ((bits & kAbsMask) > kInfinityBits) return static_cast<std::uint16_t>((bits >> 16) | 0x40u);
  // Round to nearest even on the 16 bits dropped; a carry moves into the exponent correctly.
  const std::uint32_t rounded = bits + 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<std::uint16_t>(rounded >> 16);
}

float bfloat16_to_float(std::uint16_t bits) {
  return std::bit_cast<float>(std::uint32_t{bits} << 16);
}

std::uint16_t float_to_float16(float value) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  const auto sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
  const std::uint32_t abs = bits & kAbsMask;
  if (abs >= kInfinityBits) {  // infinity, or a NaN kept quiet
    return static_cast<std::uint16_t>(sign | 0x7C00u |
                                      (abs > kInfinityBits ? 0x200u | ((abs >> 13) & 0x3FFu) : 0u));
  }
  if (abs >= 0x477FF000u) return static_cast<std::uint16_t>(sign | 0x7C00u);  // >= 65520: inf
  if (abs >= 0x38800000u) {  // binary16 normal (>= 2^-14): rebias 127 -> 15, keep 10 bits
    std::uint32_t half = (abs - 0x38000000u) >> 13;
    const std::uint32_t dropped = abs & 0x1FFFu;
    if (dropped > 0x1000u || (dropped == 0x1000u && (half & 1u) != 0)) ++half;
    return static_cast<std::uint16_t>(sign | half);
  }
  if (abs < 0x33000000u) return sign;  // below 2^-25: rounds to zero
  // Subnormal: the value in units of 2^-24, rounded to nearest even. A carry into 0x400 is the
  // smallest normal, which is the right encoding.
  const std::uint32_t exponent = abs >> 23;
  const std::uint32_t significand = (abs & 0x7FFFFFu) | 0x800000u;
  const std::uint32_t shift = 126u - exponent;  // 14..24
  std::uint32_t half = significand >> shift;
  const std::uint32_t dropped = significand & ((1u << shift) - 1u);
  const std::uint32_t midpoint = 1u << (shift - 1u);
  if (dropped > midpoint || (dropped == midpoint && (half & 1u) != 0)) ++half;
  return static_cast<std::uint16_t>(sign | half);
}

float float16_to_float(std::uint16_t bits) {
  const std::uint32_t sign = std::uint32_t{bits & 0x8000u} << 16;
  const std::uint32_t exponent = (bits >> 10) & 0x1Fu;
  const std::uint32_t mantissa = bits & 0x3FFu;
  if (exponent == 0x1F) return std::bit_cast<float>(sign | kInfinityBits | (mantissa << 13));
  if (exponent == 0) {
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;  // exact
    return sign != 0 ? -magnitude : magnitude;
  }
  return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

int float16_scale_exponent(float max_magnitude) {
  if (!(max_magnitude > 0.0f)) return 0;
  int exponent = 0;
  // max = f * 2^exponent with f in [0.5, 1): ceil(log2(max)) = exponent, less one for f = 0.5.
  const float fraction = std::frexp(max_magnitude, &exponent);
  const int ceil_log2 = fraction == 0.5f ? exponent - 1 : exponent;
  return std::clamp(15 - ceil_log2, kMinScaleExponent, kMaxScaleExponent);
}

void encode_values(std::span<const float> values, WireDtype dtype, std::span<std::byte> out) {
  assert(out.size() == payload_bytes(dtype, values.size()));
  switch (dtype) {
    case WireDtype::kFloat32:
      store_floats(values, out);
      return;
    case WireDtype::kBfloat16:
      for (std::size_t i = 0; i < values.size(); ++i) {
        store_le16(&out[2 * i], float_to_bfloat16(values[i]));
      }
      return;
    case WireDtype::kFloat16: {
      const int k = float16_scale_exponent(max_finite_magnitude(values));
      store_le16(out.data(), static_cast<std::uint16_t>(static_cast<std::int16_t>(k)));
      const float scale = power_of_two(k);
      std::byte* packed = out.data() + kScaleExponentBytes;
      for (std::size_t i = 0; i < values.size(); ++i) {
        store_le16(&packed[2 * i], float_to_float16(values[i] * scale));
      }
      return;
    }
  }
}

void decode_values(std::span<const std::byte> payload, WireDtype dtype, std::span<float> out) {
  assert(payload.size() == payload_bytes(dtype, out.size()));
  switch (dtype) {
    case WireDtype::kFloat32:
      load_floats(payload, out);
      return;
    case WireDtype::kBfloat16:
      for (std::size_t i = 0; i < out.size(); ++i) {
        out[i] = bfloat16_to_float(load_le16(&payload[2 * i]));
      }
      return;
    case WireDtype::kFloat16: {
      const int k = static_cast<std::int16_t>(load_le16(payload.data()));
      // A forged exponent outside what senders write is clamped, not trusted to ldexp's range.
      const float unscale = power_of_two(-std::clamp(k, kMinScaleExponent, kMaxScaleExponent));
      const std::byte* packed = payload.data() + kScaleExponentBytes;
      for (std::size_t i = 0; i < out.size(); ++i) {
        out[i] = float16_to_float(load_le16(&packed[2 * i])) * unscale;
      }
      return;
    }
  }
}

void round_to_wire(std::span<float> values, WireDtype dtype, std::size_t packet) {
  if (dtype == WireDtype::kFloat32 || values.empty()) return;
  if (dtype == WireDtype::kBfloat16) {
    for (float& v : values) v = bfloat16_to_float(float_to_bfloat16(v));
    return;
  }
  assert(packet > 0);
  for (std::size_t first = 0; first < values.size(); first += packet) {
    const auto part = values.subspan(first, std::min(packet, values.size() - first));
    const int k = float16_scale_exponent(max_finite_magnitude(part));
    const float scale = power_of_two(k);
    const float unscale = power_of_two(-k);
    for (float& v : part) v = float16_to_float(float_to_float16(v * scale)) * unscale;
  }
}

}  // namespace dlcp::wire
