#include "wire/values.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "wire/conversion_path.hpp"
#include "wire/data_header.hpp"

namespace dlcp::wire {
namespace {

constexpr int kMinScaleExponent = -113;  // a packet of magnitudes near FLT_MAX
constexpr int kMaxScaleExponent = 127;   // 2^127, the largest power of two a float holds

// 2^e for e within [-149, 127], exactly.
float power_of_two(int e) {
  return std::ldexp(1.0f, e);
}

void put_scale_exponent(int k, std::byte* out) {
  const auto bits = static_cast<std::uint16_t>(static_cast<std::int16_t>(k));
  out[0] = static_cast<std::byte>(bits & 0xFFu);
  out[1] = static_cast<std::byte>(bits >> 8);
}

int get_scale_exponent(const std::byte* in) {
  const auto bits = static_cast<std::uint16_t>(std::to_integer<unsigned>(in[0]) |
                                               (std::to_integer<unsigned>(in[1]) << 8));
  // A forged exponent outside what senders write is clamped, not trusted to ldexp's range.
  return std::clamp<int>(static_cast<std::int16_t>(bits), kMinScaleExponent, kMaxScaleExponent);
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
  const ConversionKernels& kernels = conversion_kernels();
  switch (dtype) {
    case WireDtype::kFloat32:
      return store_floats(values, out);
    case WireDtype::kBfloat16:
      return kernels.encode_bfloat16(values.data(), out.data(), values.size());
    case WireDtype::kFloat16: {
      const int k =
          float16_scale_exponent(kernels.max_finite_magnitude(values.data(), values.size()));
      put_scale_exponent(k, out.data());
      return kernels.encode_float16(values.data(), power_of_two(k),
                                    out.data() + kScaleExponentBytes, values.size());
    }
  }
}

void decode_values(std::span<const std::byte> payload, WireDtype dtype, std::span<float> out) {
  assert(payload.size() == payload_bytes(dtype, out.size()));
  const ConversionKernels& kernels = conversion_kernels();
  switch (dtype) {
    case WireDtype::kFloat32:
      return load_floats(payload, out);
    case WireDtype::kBfloat16:
      return kernels.decode_bfloat16(payload.data(), out.data(), out.size());
    case WireDtype::kFloat16: {
      const int k = get_scale_exponent(payload.data());
      return kernels.decode_float16(payload.data() + kScaleExponentBytes, power_of_two(-k),
                                    out.data(), out.size());
    }
  }
}

void round_to_wire(std::span<float> values, WireDtype dtype, std::size_t packet) {
  if (dtype == WireDtype::kFloat32 || values.empty()) return;
  const ConversionKernels& kernels = conversion_kernels();
  if (dtype == WireDtype::kBfloat16) return kernels.round_bfloat16(values.data(), values.size());
  // fp16 picks its scale per packet.
  assert(packet > 0);
  for (std::size_t first = 0; first < values.size(); first += packet) {
    const auto part = values.subspan(first, std::min(packet, values.size() - first));
    const int k = float16_scale_exponent(kernels.max_finite_magnitude(part.data(), part.size()));
    kernels.round_float16(part.data(), power_of_two(k), power_of_two(-k), part.size());
  }
}

}  // namespace dlcp::wire
