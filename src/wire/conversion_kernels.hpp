// The loops behind encode_values, decode_values and round_to_wire, one table per implementation.
// Every implementation gives the same bits for every input as the portable one (values.hpp
// states the rounding); the others exist only to be faster on CPUs that have the instructions.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dlcp::wire {

// Payload words are little-endian 16-bit values at any byte address.
struct ConversionKernels {
  void (*encode_bfloat16)(const float* in, std::byte* out, std::size_t n);
  void (*decode_bfloat16)(const std::byte* in, float* out, std::size_t n);
  // binary16 of in[i] * scale; decode gives binary16 * unscale.
  void (*encode_float16)(const float* in, float scale, std::byte* out, std::size_t n);
  void (*decode_float16)(const std::byte* in, float unscale, float* out, std::size_t n);
  // values[i] = decode(encode(values[i])), in place.
  void (*round_bfloat16)(float* values, std::size_t n);
  void (*round_float16)(float* values, float scale, float unscale, std::size_t n);
  // The largest finite magnitude (infinities and NaNs do not count); 0 when there is none.
  float (*max_finite_magnitude)(const float* values, std::size_t n);
};

// Plain C++ for any CPU, vectorized only as far as the compiler's baseline target allows.
const ConversionKernels& portable_kernels();

#if defined(__x86_64__) || defined(__i386__)
#define DLCP_WIRE_X86_KERNELS 1
// The portable bfloat16 loops with the binary16 ones on F16C (needs AVX and F16C).
const ConversionKernels& f16c_kernels();
// Everything in 256-bit vectors (needs AVX2 and F16C).
const ConversionKernels& avx2_kernels();
#endif

}  // namespace dlcp::wire
