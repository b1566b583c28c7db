// The 16-bit wire dtypes: conversions against references computed in double, golden payloads,
// and the property the collectives rely on (a value rounded once travels unchanged).
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "wire/values.hpp"

namespace dlcp::wire {
namespace {

std::uint32_t bits_of(float v) {
  return std::bit_cast<std::uint32_t>(v);
}

// Nearest of two candidates in double, ties to the even encoding.
std::uint16_t nearest(double x, std::uint16_t lo, double lo_value, std::uint16_t hi,
                      double hi_value) {
  const double to_lo = std::abs(x - lo_value);
  const double to_hi = std::abs(hi_value - x);
  if (to_lo < to_hi) return lo;
  if (to_hi < to_lo) return hi;
  return (lo & 1u) == 0 ? lo : hi;
}

std::uint16_t reference_bfloat16(float v) {
  const auto lo = static_cast<std::uint16_t>(bits_of(v) >> 16);
  const auto hi = static_cast<std::uint16_t>(lo + 1);
  // Past the largest finite value, IEEE rounds as if the exponent went on: to 2^128, infinity.
  const bool hi_is_infinite = (hi & 0x7F80u) == 0x7F80u;
  const double hi_value = hi_is_infinite ? std::copysign(std::ldexp(1.0, 128), v)
                                         : static_cast<double>(bfloat16_to_float(hi));
  return nearest(v, lo, bfloat16_to_float(lo), hi, hi_value);
}

// Every non-negative finite binary16 value, by encoding (they are ordered like their bits).
std::vector<double> half_values() {
  std::vector<double> values;
  for (std::uint32_t h = 0; h < 0x7C00; ++h) {
    const std::uint32_t e = h >> 10;
    const std::uint32_t m = h & 0x3FF;
    values.push_back(e == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, static_cast<int>(e) - 25));
  }
  return values;
}

std::uint16_t reference_float16(float v, const std::vector<double>& halves) {
  const double x = std::abs(static_cast<double>(v));
  const std::uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  // Beyond the largest half plus half its spacing (65520) rounds to infinity.
  if (x >= 65520.0) return sign | 0x7C00;
  const auto above = std::lower_bound(halves.begin(), halves.end(), x);
  if (above == halves.begin()) return sign;
  const auto hi = static_cast<std::uint16_t>(above - halves.begin());
  const auto lo = static_cast<std::uint16_t>(hi - 1);
  if (above == halves.end()) return sign | lo;
  return sign | nearest(x, lo, halves[lo], hi, *above);
}

TEST(WireValues, EveryBfloat16AndFloat16ValueSurvivesTheRoundTrip) {
  for (std::uint32_t b = 0; b <= 0xFFFF; ++b) {
    const auto bits = static_cast<std::uint16_t>(b);
    const float bf = bfloat16_to_float(bits);
    if (std::isnan(bf)) {
      EXPECT_TRUE(std::isnan(bfloat16_to_float(float_to_bfloat16(bf)))) << b;
    } else {
      EXPECT_EQ(float_to_bfloat16(bf), bits) << b;
    }
    const float half = float16_to_float(bits);
    if (std::isnan(half)) {
      EXPECT_TRUE(std::isnan(float16_to_float(float_to_float16(half)))) << b;
    } else {
      EXPECT_EQ(float_to_float16(half), bits) << b;
    }
  }
  EXPECT_EQ(float16_to_float(0x3C00), 1.0f);
  EXPECT_EQ(float16_to_float(0x7BFF), 65504.0f);
  EXPECT_EQ(float16_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(bfloat16_to_float(0x3F80), 1.0f);
}

TEST(WireValues, RoundingToNearestEvenMatchesADoubleReference) {
  const std::vector<double> halves = half_values();
  std::mt19937 rng(7);
  std::uniform_int_distribution<std::uint32_t> any_bits;
  std::uniform_real_distribution<float> mantissa(1.0f, 2.0f);
  std::uniform_int_distribution<int> exponent(-30, 18);
  std::vector<float> samples{0.0f,
                             -0.0f,
                             65504.0f,
                             65519.99f,
                             65520.0f,
                             -65520.0f,
                             std::ldexp(1.0f, -24),
                             std::ldexp(1.0f, -25),
                             std::ldexp(1.5f, -25),
                             std::ldexp(1.0f, -14) * (1 - 0x1p-12f),
                             1.0f + 0x1p-11f,  // a tie between two halves
                             1.0f + 3 * 0x1p-11f,
                             std::numeric_limits<float>::max(),
                             std::numeric_limits<float>::denorm_min()};
  for (int i = 0; i < 200000; ++i) {
    samples.push_back(std::ldexp(mantissa(rng), exponent(rng)) * (i % 2 == 0 ? 1.0f : -1.0f));
    const float any = std::bit_cast<float>(any_bits(rng));
    if (std::isfinite(any)) samples.push_back(any);
  }
  for (const float v : samples) {
    ASSERT_EQ(float_to_float16(v), reference_float16(v, halves)) << v;
    ASSERT_EQ(float_to_bfloat16(v), reference_bfloat16(v)) << v;
#ifdef __FLT16_MAX__
    // Where the compiler has a binary16 type, it agrees too.
    ASSERT_EQ(float_to_float16(v), std::bit_cast<std::uint16_t>(static_cast<_Float16>(v))) << v;
#endif
  }
}

TEST(WireValues, InfinitiesAndNaNsKeepTheirKind) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(float_to_float16(inf), 0x7C00);
  EXPECT_EQ(float_to_float16(-inf), 0xFC00);
  EXPECT_TRUE(std::isnan(float16_to_float(float_to_float16(nan))));
  EXPECT_EQ(float_to_bfloat16(inf), 0x7F80);
  EXPECT_TRUE(std::isnan(bfloat16_to_float(float_to_bfloat16(nan))));
  // A signalling NaN whose payload sits in the dropped bits must not round into infinity.
  EXPECT_TRUE(std::isnan(bfloat16_to_float(float_to_bfloat16(std::bit_cast<float>(0x7F800001u)))));
  // In a scaled fp16 packet they travel beside finite values, which set the scale.
  std::vector<float> values{1.0f, inf, -inf, nan, 0.25f};
  std::vector<std::byte> payload(payload_bytes(WireDtype::kFloat16, values.size()));
  encode_values(values, WireDtype::kFloat16, payload);
  std::vector<float> back(values.size());
  decode_values(payload, WireDtype::kFloat16, back);
  EXPECT_EQ(back[0], 1.0f);
  EXPECT_EQ(back[1], inf);
  EXPECT_EQ(back[2], -inf);
  EXPECT_TRUE(std::isnan(back[3]));
  EXPECT_EQ(back[4], 0.25f);
}

TEST(WireValues, Float16ScaleBringsTheLargestMagnitudeIntoTheTopBinade) {
  EXPECT_EQ(float16_scale_exponent(0.0f), 0);
  EXPECT_EQ(float16_scale_exponent(1.0f), 15);   // 1 * 2^15 = 32768
  EXPECT_EQ(float16_scale_exponent(1.5f), 14);   // 24576
  EXPECT_EQ(float16_scale_exponent(1e-3f), 24);  // 16777
  EXPECT_EQ(float16_scale_exponent(std::numeric_limits<float>::max()), -113);
  EXPECT_EQ(float16_scale_exponent(std::numeric_limits<float>::denorm_min()), 127);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> mantissa(1.0f, 2.0f);
  std::uniform_int_distribution<int> exponent(-100, 100);
  for (int i = 0; i < 10000; ++i) {
    const float m = std::ldexp(mantissa(rng), exponent(rng));
    const double scaled = std::ldexp(static_cast<double>(m), float16_scale_exponent(m));
    ASSERT_GT(scaled, 16384.0) << m;
    ASSERT_LE(scaled, 32768.0) << m;
  }
}

TEST(WireValues, GoldenPayloads) {
  const std::vector<float> values{1.0f, -2.0f};
  std::vector<std::byte> bf16(payload_bytes(WireDtype::kBfloat16, 2));
  encode_values(values, WireDtype::kBfloat16, bf16);
  EXPECT_EQ(bf16, (std::vector<std::byte>{std::byte{0x80}, std::byte{0x3F}, std::byte{0x00},
                                          std::byte{0xC0}}));
  // Largest magnitude 2: k = 14, so 1.0 travels as 16384 (0x7400), -2.0 as -32768 (0xF800).
  std::vector<std::byte> fp16(payload_bytes(WireDtype::kFloat16, 2));
  encode_values(values, WireDtype::kFloat16, fp16);
  EXPECT_EQ(fp16, (std::vector<std::byte>{std::byte{0x0E}, std::byte{0x00}, std::byte{0x00},
                                          std::byte{0x74}, std::byte{0x00}, std::byte{0xF8}}));
  std::vector<float> back(2);
  decode_values(fp16, WireDtype::kFloat16, back);
  EXPECT_EQ(back, values);
}

// encode_values and decode_values convert whole runs (with the CPU's F16C where it has it); they
// must give exactly what the one-value conversions give, NaNs, subnormals and odd lengths
// included, at any byte offset.
TEST(WireValues, BulkConversionsEqualTheScalarOnes) {
  std::mt19937 rng(17);
  std::uniform_int_distribution<std::uint32_t> any_bits;
  std::uniform_int_distribution<int> magnitude(-40, 40);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (const std::size_t n :
       {std::size_t{1}, std::size_t{7}, std::size_t{8}, std::size_t{513}, std::size_t{1500}}) {
    std::vector<float> values(n);
    for (std::size_t i = 0; i < n; ++i) {
      values[i] = i % 5 == 0 ? std::bit_cast<float>(any_bits(rng))
                             : std::ldexp(normal(rng), magnitude(rng) / 4);
    }
    for (const WireDtype dtype : {WireDtype::kBfloat16, WireDtype::kFloat16}) {
      // One byte in, so the payload is not 2-byte aligned.
      std::vector<std::byte> buffer(1 + payload_bytes(dtype, n));
      const std::span<std::byte> payload = std::span(buffer).subspan(1);
      encode_values(values, dtype, payload);
      int k = 0;
      std::size_t at = 0;
      if (dtype == WireDtype::kFloat16) {
        float largest = 0;
        for (const float v : values) {
          if (std::isfinite(v)) largest = std::max(largest, std::abs(v));
        }
        k = float16_scale_exponent(largest);
        at = kScaleExponentBytes;
        EXPECT_EQ(static_cast<std::int16_t>(std::to_integer<unsigned>(payload[0]) |
                                            (std::to_integer<unsigned>(payload[1]) << 8)),
                  k);
      }
      std::vector<float> back(n);
      decode_values(payload, dtype, back);
      for (std::size_t i = 0; i < n; ++i) {
        const auto word =
            static_cast<std::uint16_t>(std::to_integer<unsigned>(payload[at + 2 * i]) |
                                       (std::to_integer<unsigned>(payload[at + 2 * i + 1]) << 8));
        const std::uint16_t scalar = dtype == WireDtype::kBfloat16
                                         ? float_to_bfloat16(values[i])
                                         : float_to_float16(values[i] * std::ldexp(1.0f, k));
        ASSERT_EQ(word, scalar) << to_string(dtype) << " n=" << n << " i=" << i;
        const float decoded = dtype == WireDtype::kBfloat16
                                  ? bfloat16_to_float(word)
                                  : float16_to_float(word) * std::ldexp(1.0f, -k);
        ASSERT_EQ(bits_of(back[i]), bits_of(decoded)) << to_string(dtype) << " i=" << i;
      }
    }
  }
}

TEST(WireValues, PayloadSizes) {
  EXPECT_EQ(payload_bytes(WireDtype::kFloat32, 358), 1432u);
  EXPECT_EQ(payload_bytes(WireDtype::kBfloat16, 358), 716u);
  EXPECT_EQ(payload_bytes(WireDtype::kFloat16, 358), 718u);
  EXPECT_EQ(values_fitting(WireDtype::kFloat16, 1), 0u);
  EXPECT_EQ(values_fitting(WireDtype::kFloat16, 1432), 715u);
  // What a 1500-byte packet's float32 stride becomes in 16 bits.
  EXPECT_EQ(packet_values(WireDtype::kFloat32, 358), 358);
  EXPECT_EQ(packet_values(WireDtype::kBfloat16, 358), 716);
  EXPECT_EQ(packet_values(WireDtype::kFloat16, 358), 715);
  // The stride field's limit.
  EXPECT_EQ(packet_values(WireDtype::kBfloat16, 40000), 65535);
}

// Values rounded by round_to_wire encode to packets that decode to exactly those values again:
// what the collectives do to a rank's input and to an owner's result before sending them.
TEST(WireValues, RoundedValuesTravelUnchanged) {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> magnitude(-40, 20);
  for (const WireDtype dtype : {WireDtype::kBfloat16, WireDtype::kFloat16}) {
    for (int trial = 0; trial < 300; ++trial) {
      const std::size_t packet = 1 + static_cast<std::size_t>(trial % 97);
      std::vector<float> values(packet * 3 + static_cast<std::size_t>(trial % 5));
      const int scale = magnitude(rng);
      for (float& v : values) v = std::ldexp(normal(rng), scale);
      if (trial % 3 == 0) {
        // The boundary case: the largest magnitude rounds down onto 2^14 after scaling, so the
        // second encoding picks a scale one higher.
        values[0] = std::ldexp(1.0f + 0x1p-12f, scale);
        for (std::size_t i = 1; i < std::min(packet, values.size()); ++i) values[i] *= 0x1p-3f;
      }
      round_to_wire(values, dtype, packet);
      for (std::size_t first = 0; first < values.size(); first += packet) {
        const std::size_t n = std::min(packet, values.size() - first);
        const std::span<const float> part(values.data() + first, n);
        std::vector<std::byte> payload(payload_bytes(dtype, n));
        encode_values(part, dtype, payload);
        std::vector<float> back(n);
        decode_values(payload, dtype, back);
        for (std::size_t i = 0; i < n; ++i) {
          ASSERT_EQ(bits_of(back[i]), bits_of(part[i]))
              << to_string(dtype) << " trial " << trial << " entry " << first + i;
        }
      }
    }
  }
}

TEST(WireValues, RelativeErrorOfOneRounding) {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 1e-3f);
  std::vector<float> values(4096);
  for (float& v : values) v = normal(rng);
  const float largest = std::ranges::max(values, {}, [](float v) { return std::abs(v); });
  for (const auto& [dtype, bound] :
       {std::pair{WireDtype::kBfloat16, 0x1p-8}, {WireDtype::kFloat16, 0x1p-11}}) {
    std::vector<float> rounded = values;
    round_to_wire(rounded, dtype, values.size());
    for (std::size_t i = 0; i < values.size(); ++i) {
      // Half a unit in the last place of 8 (bf16) or 11 (fp16) significant bits, relative to the
      // value; fp16's subnormals, 29 binades below the packet's largest, have a fixed spacing.
      const double error = std::abs(static_cast<double>(rounded[i]) - values[i]);
      const double floor = dtype == WireDtype::kFloat16 ? std::abs(largest) * 0x1p-29 : 0.0;
      const double reference = std::max<double>(std::abs(values[i]), floor);
      ASSERT_LE(error, bound * reference) << to_string(dtype) << " " << values[i];
    }
  }
}

}  // namespace
}  // namespace dlcp::wire
