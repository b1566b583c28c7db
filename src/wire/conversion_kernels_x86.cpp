// The x86 kernels: F16C for binary16, AVX2 integer arithmetic for bfloat16. Each function carries
// its own target attribute, so that nothing else in the library is compiled for these
// instructions; conversion_path.cpp calls them only on CPUs that have them. The tails shorter
// than a vector go through the one-value conversions, the reference itself.
#include "wire/conversion_kernels.hpp"

#ifdef DLCP_WIRE_X86_KERNELS

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>

#include "wire/values.hpp"

namespace dlcp::wire {
namespace {

constexpr std::size_t kLanes = 8;  // floats in a 256-bit vector

// x86 is little-endian, as payloads are.
void store_word(std::byte* out, std::uint16_t word) {
  std::memcpy(out, &word, sizeof(word));
}

std::uint16_t load_word(const std::byte* in) {
  std::uint16_t word = 0;
  std::memcpy(&word, in, sizeof(word));
  return word;
}

__attribute__((target("avx,f16c"))) void encode_float16_f16c(const float* in, float scale,
                                                             std::byte* out, std::size_t n) {
  const __m256 factor = _mm256_set1_ps(scale);
  std::size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    const __m256 scaled = _mm256_mul_ps(_mm256_loadu_ps(in + i), factor);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 2 * i),
                     _mm256_cvtps_ph(scaled, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  for (; i < n; ++i) store_word(out + 2 * i, float_to_float16(in[i] * scale));
}

__attribute__((target("avx,f16c"))) void decode_float16_f16c(const std::byte* in, float unscale,
                                                             float* out, std::size_t n) {
  const __m256 factor = _mm256_set1_ps(unscale);
  std::size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    const __m256 wide =
        _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 2 * i)));
    _mm256_storeu_ps(out + i, _mm256_mul_ps(wide, factor));
  }
  for (; i < n; ++i) out[i] = float16_to_float(load_word(in + 2 * i)) * unscale;
}

__attribute__((target("avx,f16c"))) void round_float16_f16c(float* values, float scale,
                                                            float unscale, std::size_t n) {
  const __m256 up = _mm256_set1_ps(scale);
  const __m256 down = _mm256_set1_ps(unscale);
  std::size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    const __m256 scaled = _mm256_mul_ps(_mm256_loadu_ps(values + i), up);
    const __m128i halves = _mm256_cvtps_ph(scaled, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm256_storeu_ps(values + i, _mm256_mul_ps(_mm256_cvtph_ps(halves), down));
  }
  for (; i < n; ++i) values[i] = float16_to_float(float_to_float16(values[i] * scale)) * unscale;
}

// float_to_bfloat16 on eight values: each lane's bfloat16 in its low 16 bits.
__attribute__((target("avx2"))) inline __m256i bfloat16_lanes(__m256i bits) {
  const __m256i lowest_kept = _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_srli_epi32(
      _mm256_add_epi32(_mm256_add_epi32(bits, _mm256_set1_epi32(0x7FFF)), lowest_kept), 16);
  const __m256i quiet_nan = _mm256_or_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(0x40));
  // Signed compare: the magnitude's bits are below 2^31.
  const __m256i is_nan = _mm256_cmpgt_epi32(_mm256_and_si256(bits, _mm256_set1_epi32(0x7FFFFFFF)),
                                            _mm256_set1_epi32(0x7F800000));
  return _mm256_blendv_epi8(rounded, quiet_nan, is_nan);
}

__attribute__((target("avx2"))) __m256i load_bits(const float* in) {
  return _mm256_castps_si256(_mm256_loadu_ps(in));
}

__attribute__((target("avx2"))) void encode_bfloat16_avx2(const float* in, std::byte* out,
                                                          std::size_t n) {
  std::size_t i = 0;
  for (; i + 2 * kLanes <= n; i += 2 * kLanes) {
    const __m256i low = bfloat16_lanes(load_bits(in + i));
    const __m256i high = bfloat16_lanes(load_bits(in + i + kLanes));
    // The words fit unsigned 16 bits, so packing does not saturate; it interleaves the two
    // vectors' 128-bit halves, which the permutation puts back in order.
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(low, high), 0xD8);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 2 * i), packed);
  }
  if (i + kLanes <= n) {
    const __m256i words = bfloat16_lanes(load_bits(in + i));
    const __m128i packed =
        _mm_packus_epi32(_mm256_castsi256_si128(words), _mm256_extracti128_si256(words, 1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 2 * i), packed);
    i += kLanes;
  }
  for (; i < n; ++i) store_word(out + 2 * i, float_to_bfloat16(in[i]));
}

__attribute__((target("avx2"))) void decode_bfloat16_avx2(const std::byte* in, float* out,
                                                          std::size_t n) {
  std::size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    const __m128i words = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 2 * i));
    const __m256i bits = _mm256_slli_epi32(_mm256_cvtepu16_epi32(words), 16);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), bits);
  }
  for (; i < n; ++i) out[i] = bfloat16_to_float(load_word(in + 2 * i));
}

__attribute__((target("avx2"))) void round_bfloat16_avx2(float* values, std::size_t n) {
  std::size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    const __m256i rounded = _mm256_slli_epi32(bfloat16_lanes(load_bits(values + i)), 16);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(values + i), rounded);
  }
  for (; i < n; ++i) values[i] = bfloat16_to_float(float_to_bfloat16(values[i]));
}

__attribute__((target("avx2"))) float max_finite_magnitude_avx2(const float* values,
                                                                std::size_t n) {
  const __m256i magnitude_mask = _mm256_set1_epi32(0x7FFFFFFF);
  const __m256i infinity = _mm256_set1_epi32(0x7F800000);
  // Magnitudes compare like their bits; signed compares do, as they are below 2^31.
  __m256i largest = _mm256_setzero_si256();
  std::size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    const __m256i magnitude = _mm256_and_si256(load_bits(values + i), magnitude_mask);
    const __m256i finite = _mm256_cmpgt_epi32(infinity, magnitude);
    largest = _mm256_max_epi32(largest, _mm256_and_si256(magnitude, finite));
  }
  alignas(32) std::array<std::int32_t, kLanes> lanes;
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes.data()), largest);
  float result = std::bit_cast<float>(*std::max_element(lanes.begin(), lanes.end()));
  // The tail through the reference, which returns 0 for none finite.
  if (i < n) result = std::max(result, portable_kernels().max_finite_magnitude(values + i, n - i));
  return result;
}

}  // namespace

const ConversionKernels& f16c_kernels() {
  static const ConversionKernels kernels{
      portable_kernels().encode_bfloat16,
      portable_kernels().decode_bfloat16,
      encode_float16_f16c,
      decode_float16_f16c,
      portable_kernels().round_bfloat16,
      round_float16_f16c,
      portable_kernels().max_finite_magnitude,
  };
  return kernels;
}

const ConversionKernels& avx2_kernels() {
  static constexpr ConversionKernels kernels{
      encode_bfloat16_avx2, decode_bfloat16_avx2, encode_float16_f16c,       decode_float16_f16c,
      round_bfloat16_avx2,  round_float16_f16c,   max_finite_magnitude_avx2,
  };
  return kernels;
}

}  // namespace dlcp::wire

#endif
