// Every conversion path this CPU supports (conversion_path.hpp) against the portable reference,
// bit for bit: every 16-bit word decoded, at every fp16 scale exponent; millions of float32 bit
// patterns encoded, rounding ties, NaN payloads, infinities and subnormals included; fp16
// packets whose scale the vector loop and the tail must agree on; lengths around the vector
// widths, at odd byte offsets.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "wire/conversion_path.hpp"
#include "wire/values.hpp"

namespace dlcp::wire {
namespace {

std::uint32_t bits_of(float v) {
  return std::bit_cast<std::uint32_t>(v);
}

float from_bits(std::uint32_t bits) {
  return std::bit_cast<float>(bits);
}

// Switches the path for one scope and back to the default afterwards.
class ConversionPathScope {
 public:
  explicit ConversionPathScope(ConversionPath path) : before_(conversion_path()) {
    EXPECT_TRUE(use_conversion_path(path)) << to_string(path);
  }
  ~ConversionPathScope() { use_conversion_path(before_); }
  ConversionPathScope(const ConversionPathScope&) = delete;
  ConversionPathScope& operator=(const ConversionPathScope&) = delete;

 private:
  ConversionPath before_;
};

// The paths to compare with the reference: all supported but the portable one.
std::vector<ConversionPath> fast_paths() {
  std::vector<ConversionPath> paths;
  for (const ConversionPath path : supported_conversion_paths()) {
    if (path != ConversionPath::kPortable) paths.push_back(path);
  }
  return paths;
}

// Runs `convert` under the portable path and under each other path; the bytes it returns must
// agree. Prints the first difference.
template <typename Convert>
void expect_every_path_agrees(const std::string& what, Convert convert) {
  std::vector<std::byte> reference;
  {
    ConversionPathScope scope(ConversionPath::kPortable);
    reference = convert();
  }
  for (const ConversionPath path : fast_paths()) {
    ConversionPathScope scope(path);
    const std::vector<std::byte> fast = convert();
    ASSERT_EQ(fast.size(), reference.size()) << what << " on " << to_string(path);
    const auto [a, b] = std::mismatch(fast.begin(), fast.end(), reference.begin());
    ASSERT_TRUE(a == fast.end()) << what << " on " << to_string(path) << ": byte "
                                 << (a - fast.begin()) << " differs";
  }
}

template <typename T>
std::vector<std::byte> as_bytes(const std::vector<T>& values) {
  const auto bytes = std::as_bytes(std::span(values));
  return {bytes.begin(), bytes.end()};
}

// Float32 inputs that stress the rounding: every bfloat16 word's neighbourhood (exact, just
// below, at and just above the tie, and the NaN payloads there), the binary16 ties at several
// scales, the specials, and random bit patterns.
std::vector<float> hard_floats(std::size_t random_count) {
  std::vector<float> values;
  for (std::uint32_t word = 0; word <= 0xFFFF; ++word) {
    for (const std::uint32_t low : {0x0000u, 0x0001u, 0x7FFFu, 0x8000u, 0x8001u, 0xFFFFu}) {
      values.push_back(from_bits((word << 16) | low));
    }
  }
  // Around binary16's ties: the 13 dropped bits at 0x1000, for values a scale brings into range.
  for (std::uint32_t exponent = 90; exponent < 160; ++exponent) {
    for (std::uint32_t top = 0; top < 1024; top += 7) {
      const std::uint32_t base = (exponent << 23) | (top << 13);
      for (const std::uint32_t low : {0x0FFFu, 0x1000u, 0x1001u, 0x0000u, 0x1FFFu}) {
        values.push_back(from_bits(base | low));
        values.push_back(from_bits(0x80000000u | base | low));
      }
    }
  }
  const float inf = std::numeric_limits<float>::infinity();
  for (const float special :
       {0.0f, -0.0f, inf, -inf, std::numeric_limits<float>::quiet_NaN(),
        std::numeric_limits<float>::signaling_NaN(), -std::numeric_limits<float>::quiet_NaN(),
        std::numeric_limits<float>::max(), std::numeric_limits<float>::lowest(),
        std::numeric_limits<float>::min(), std::numeric_limits<float>::denorm_min(), 65504.0f,
        65519.99f, 65520.0f, -65520.0f}) {
    values.push_back(special);
  }
  std::mt19937 rng(23);
  std::uniform_int_distribution<std::uint32_t> any_bits;
  for (std::size_t i = 0; i < random_count; ++i) values.push_back(from_bits(any_bits(rng)));
  return values;
}

TEST(WireConversionPaths, ThePortablePathIsAlwaysThereAndTheFastestIsTheDefault) {
  const auto paths = supported_conversion_paths();
  ASSERT_FALSE(paths.empty());
  EXPECT_EQ(paths.front(), ConversionPath::kPortable);
  EXPECT_EQ(conversion_path(), paths.back());
  EXPECT_EQ(cpu_has_f16c(),
            std::find(paths.begin(), paths.end(), ConversionPath::kF16c) != paths.end());
  {
    ConversionPathScope scope(ConversionPath::kPortable);
    EXPECT_EQ(conversion_path(), ConversionPath::kPortable);
  }
  EXPECT_EQ(conversion_path(), paths.back());
}

TEST(WireConversionPaths, EveryBfloat16WordDecodesAlike) {
  std::vector<std::byte> payload(1 + 2 * 0x10000);
  for (std::uint32_t word = 0; word <= 0xFFFF; ++word) {
    payload[1 + 2 * word] = static_cast<std::byte>(word & 0xFFu);
    payload[2 + 2 * word] = static_cast<std::byte>(word >> 8);
  }
  // One byte in: payloads sit at odd offsets of a datagram.
  const auto words = std::span<const std::byte>(payload).subspan(1);
  expect_every_path_agrees("bf16 decode", [&] {
    std::vector<float> out(0x10000);
    decode_values(words, WireDtype::kBfloat16, out);
    return as_bytes(out);
  });
  // And they are what the one-value conversion gives.
  std::vector<float> out(0x10000);
  decode_values(words, WireDtype::kBfloat16, out);
  for (std::uint32_t word = 0; word <= 0xFFFF; ++word) {
    ASSERT_EQ(bits_of(out[word]), bits_of(bfloat16_to_float(static_cast<std::uint16_t>(word))));
  }
}

TEST(WireConversionPaths, EveryFloat16WordDecodesAlikeAtEveryScale) {
  std::vector<std::byte> payload(1 + kScaleExponentBytes + 2 * 0x10000);
  const auto packet = std::span(payload).subspan(1);
  for (std::uint32_t word = 0; word <= 0xFFFF; ++word) {
    packet[kScaleExponentBytes + 2 * word] = static_cast<std::byte>(word & 0xFFu);
    packet[kScaleExponentBytes + 2 * word + 1] = static_cast<std::byte>(word >> 8);
  }
  std::vector<int> exponents;
  for (int k = -113; k <= 127; ++k) exponents.push_back(k);
  // Forged exponents, which the decoder clamps.
  for (const int k : {-32768, -114, 128, 32767}) exponents.push_back(k);
  expect_every_path_agrees("fp16 decode", [&] {
    std::vector<float> out;
    std::vector<float> decoded(0x10000);
    for (const int k : exponents) {
      const auto bits = static_cast<std::uint16_t>(static_cast<std::int16_t>(k));
      packet[0] = static_cast<std::byte>(bits & 0xFFu);
      packet[1] = static_cast<std::byte>(bits >> 8);
      decode_values(packet, WireDtype::kFloat16, decoded);
      out.insert(out.end(), decoded.begin(), decoded.end());
    }
    return as_bytes(out);
  });
}

TEST(WireConversionPaths, HardAndRandomFloatsEncodeAlike) {
  const std::vector<float> values = hard_floats(3'000'000);
  for (const WireDtype dtype : {WireDtype::kBfloat16, WireDtype::kFloat16}) {
    // Packets of the size the data plane uses (fp16's scale is per packet, so random bit
    // patterns, often huge, set it; the ties above land at several scales).
    const std::size_t packet = 715;
    expect_every_path_agrees(std::string(to_string(dtype)) + " encode", [&] {
      std::vector<std::byte> out;
      std::vector<std::byte> payload;
      for (std::size_t first = 0; first < values.size(); first += packet) {
        const auto part = std::span(values).subspan(first, std::min(packet, values.size() - first));
        payload.resize(payload_bytes(dtype, part.size()));
        encode_values(part, dtype, payload);
        out.insert(out.end(), payload.begin(), payload.end());
      }
      return out;
    });
  }
}

TEST(WireConversionPaths, Bfloat16EncodingIsTheOneValueConversion) {
  const std::vector<float> values = hard_floats(1'000'000);
  std::vector<std::byte> payload(payload_bytes(WireDtype::kBfloat16, values.size()));
  encode_values(values, WireDtype::kBfloat16, payload);
  for (std::size_t i = 0; i < values.size(); ++i) {
    const auto word =
        static_cast<std::uint16_t>(std::to_integer<unsigned>(payload[2 * i]) |
                                   (std::to_integer<unsigned>(payload[2 * i + 1]) << 8));
    ASSERT_EQ(word, float_to_bfloat16(values[i])) << std::hex << bits_of(values[i]);
  }
}

// Small gradient-like packets at many magnitudes, a special value here and there, of every
// length around the vector widths: the scale (the largest finite magnitude, from the vector
// loop or the tail) and the tails must agree.
std::vector<std::vector<float>> assorted_packets() {
  std::mt19937 rng(29);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> binade(-140, 120);
  std::uniform_int_distribution<std::uint32_t> any_bits;
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> specials{inf,
                                    -inf,
                                    std::numeric_limits<float>::quiet_NaN(),
                                    from_bits(0x7F800001u),
                                    from_bits(0xFFFFFFFFu),
                                    std::numeric_limits<float>::denorm_min(),
                                    -0.0f};
  std::vector<std::vector<float>> packets;
  for (std::size_t n = 0; n <= 70; ++n) {
    for (int trial = 0; trial < 40; ++trial) {
      const int scale = binade(rng);
      std::vector<float> packet(n);
      for (float& v : packet) v = std::ldexp(normal(rng), scale);
      if (n > 0 && trial % 2 == 0) packet[any_bits(rng) % n] = specials[trial % specials.size()];
      // The largest magnitude in the tail, where the vector loop does not look.
      if (n > 0 && trial % 3 == 0) packet[n - 1] = std::ldexp(4.0f, scale);
      if (n > 0 && trial % 5 == 0) packet[any_bits(rng) % n] = from_bits(any_bits(rng));
      packets.push_back(std::move(packet));
    }
  }
  return packets;
}

TEST(WireConversionPaths, PacketsOfEveryLengthEncodeDecodeAndRoundAlike) {
  const auto packets = assorted_packets();
  for (const WireDtype dtype : {WireDtype::kBfloat16, WireDtype::kFloat16}) {
    const std::string name(to_string(dtype));
    expect_every_path_agrees(name + " packets", [&] {
      std::vector<std::byte> out;
      for (const auto& packet : packets) {
        std::vector<std::byte> buffer(3 + payload_bytes(dtype, packet.size()));
        const auto payload = std::span(buffer).subspan(3);
        encode_values(packet, dtype, payload);
        std::vector<float> back(packet.size());
        decode_values(payload, dtype, back);
        std::vector<float> rounded = packet;
        round_to_wire(rounded, dtype, std::max<std::size_t>(1, packet.size()));
        out.insert(out.end(), payload.begin(), payload.end());
        const auto back_bytes = as_bytes(back);
        out.insert(out.end(), back_bytes.begin(), back_bytes.end());
        const auto rounded_bytes = as_bytes(rounded);
        out.insert(out.end(), rounded_bytes.begin(), rounded_bytes.end());
      }
      return out;
    });
  }
}

TEST(WireConversionPaths, RoundingAlongManyPacketsAgrees) {
  const std::vector<float> values = hard_floats(200'000);
  for (const WireDtype dtype : {WireDtype::kBfloat16, WireDtype::kFloat16}) {
    for (const std::size_t packet : {std::size_t{1}, std::size_t{13}, std::size_t{715}}) {
      expect_every_path_agrees(std::string(to_string(dtype)) + " round_to_wire", [&] {
        std::vector<float> rounded = values;
        round_to_wire(rounded, dtype, packet);
        return as_bytes(rounded);
      });
    }
  }
}

}  // namespace
}  // namespace dlcp::wire
