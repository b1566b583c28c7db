// The one-value conversions and the portable kernels built from them: the reference that every
// other implementation must match bit for bit. In one file, so that the loops inline them.
#include <algorithm>
#include <array>
#include <bit>
#include <cstring>

#include "wire/conversion_kernels.hpp"
#include "wire/values.hpp"

namespace dlcp::wire {
namespace {

constexpr std::uint32_t kAbsMask = 0x7FFFFFFFu;
constexpr std::uint32_t kInfinityBits = 0x7F800000u;

// Conversions run over runs of kChunk values through an aligned 16-bit buffer, in blocks of 8
// with a fixed trip count, which g++ vectorizes at -O2; the payload is then copied in one go (it
// may sit at any byte offset of a datagram).
constexpr std::size_t kChunk = 512;
constexpr std::size_t kLanes = 8;
using Halves = std::array<std::uint16_t, kChunk>;

// Round to nearest even on the 16 bits dropped (a carry moves into the exponent correctly); a
// NaN stays a NaN, quietened, whatever its payload, since rounding could carry it into infinity.
// Without branches, so that the loops below vectorize.
inline std::uint16_t bfloat16_bits(float value) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  const std::uint32_t rounded = (bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16;
  const std::uint32_t quiet_nan = (bits >> 16) | 0x40u;
  return static_cast<std::uint16_t>((bits & kAbsMask) > kInfinityBits ? quiet_nan : rounded);
}

inline float widen_bfloat16(std::uint16_t bits) {
  return std::bit_cast<float>(std::uint32_t{bits} << 16);
}

// The payload's little-endian 16-bit words from/to host order.
void put_halves(const std::uint16_t* halves, std::size_t n, std::byte* out) {
  if constexpr (std::endian::native == std::endian::little) {
    std::memcpy(out, halves, 2 * n);
  } else {
    for (std::size_t i = 0; i < n; ++i) {
      out[2 * i] = static_cast<std::byte>(halves[i] & 0xFFu);
      out[2 * i + 1] = static_cast<std::byte>(halves[i] >> 8);
    }
  }
}

void get_halves(const std::byte* in, std::size_t n, std::uint16_t* halves) {
  if constexpr (std::endian::native == std::endian::little) {
    std::memcpy(halves, in, 2 * n);
  } else {
    for (std::size_t i = 0; i < n; ++i) {
      halves[i] = static_cast<std::uint16_t>(std::to_integer<unsigned>(in[2 * i]) |
                                             (std::to_integer<unsigned>(in[2 * i + 1]) << 8));
    }
  }
}

void to_bfloat16(const float* in, std::uint16_t* out, std::size_t n) {
  std::size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (std::size_t j = 0; j < kLanes; ++j) out[i + j] = bfloat16_bits(in[i + j]);
  }
  for (; i < n; ++i) out[i] = bfloat16_bits(in[i]);
}

void from_bfloat16(const std::uint16_t* in, float* out, std::size_t n) {
  std::size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (std::size_t j = 0; j < kLanes; ++j) out[i + j] = widen_bfloat16(in[i + j]);
  }
  for (; i < n; ++i) out[i] = widen_bfloat16(in[i]);
}

void encode_bfloat16(const float* in, std::byte* out, std::size_t n) {
  alignas(32) Halves halves;
  for (std::size_t first = 0; first < n; first += kChunk) {
    const std::size_t run = std::min(kChunk, n - first);
    to_bfloat16(in + first, halves.data(), run);
    put_halves(halves.data(), run, out + 2 * first);
  }
}

void decode_bfloat16(const std::byte* in, float* out, std::size_t n) {
  alignas(32) Halves halves;
  for (std::size_t first = 0; first < n; first += kChunk) {
    const std::size_t run = std::min(kChunk, n - first);
    get_halves(in + 2 * first, run, halves.data());
    from_bfloat16(halves.data(), out + first, run);
  }
}

void encode_float16(const float* in, float scale, std::byte* out, std::size_t n) {
  alignas(32) Halves halves;
  for (std::size_t first = 0; first < n; first += kChunk) {
    const std::size_t run = std::min(kChunk, n - first);
    for (std::size_t i = 0; i < run; ++i) halves[i] = float_to_float16(in[first + i] * scale);
    put_halves(halves.data(), run, out + 2 * first);
  }
}

void decode_float16(const std::byte* in, float unscale, float* out, std::size_t n) {
  alignas(32) Halves halves;
  for (std::size_t first = 0; first < n; first += kChunk) {
    const std::size_t run = std::min(kChunk, n - first);
    get_halves(in + 2 * first, run, halves.data());
    for (std::size_t i = 0; i < run; ++i) out[first + i] = float16_to_float(halves[i]) * unscale;
  }
}

void round_bfloat16(float* values, std::size_t n) {
  alignas(32) Halves halves;
  for (std::size_t first = 0; first < n; first += kChunk) {
    const std::size_t run = std::min(kChunk, n - first);
    to_bfloat16(values + first, halves.data(), run);
    from_bfloat16(halves.data(), values + first, run);
  }
}

void round_float16(float* values, float scale, float unscale, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    values[i] = float16_to_float(float_to_float16(values[i] * scale)) * unscale;
  }
}

float max_finite_magnitude(const float* values, std::size_t n) {
  const auto finite_bits = [](float v) {
    const std::uint32_t bits = std::bit_cast<std::uint32_t>(v) & kAbsMask;
    return bits < kInfinityBits ? bits : 0u;
  };
  std::array<std::uint32_t, kLanes> lanes{};
  std::size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (std::size_t j = 0; j < kLanes; ++j)
      lanes[j] = std::max(lanes[j], finite_bits(values[i + j]));
  }
  std::uint32_t max_bits = *std::max_element(lanes.begin(), lanes.end());
  for (; i < n; ++i) max_bits = std::max(max_bits, finite_bits(values[i]));
  return std::bit_cast<float>(max_bits);
}

}  // namespace

std::uint16_t float_to_bfloat16(float value) {
  return bfloat16_bits(value);
}

float bfloat16_to_float(std::uint16_t bits) {
  return widen_bfloat16(bits);
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

const ConversionKernels& portable_kernels() {
  static constexpr ConversionKernels kernels{
      encode_bfloat16, decode_bfloat16, encode_float16,       decode_float16,
      round_bfloat16,  round_float16,   max_finite_magnitude,
  };
  return kernels;
}

}  // namespace dlcp::wire
