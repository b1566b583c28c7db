#include "wire/conversion_path.hpp"

#include <algorithm>
#include <array>
#include <atomic>

#ifdef DLCP_WIRE_X86_KERNELS
#include <cpuid.h>
#endif

#include "wire/values.hpp"

namespace dlcp::wire {
namespace {

struct SupportedPaths {
  std::array<ConversionPath, 3> paths{};
  std::size_t count = 0;
};

const SupportedPaths& supported() {
  static const SupportedPaths cpu = [] {
    SupportedPaths s;
    s.paths[s.count++] = ConversionPath::kPortable;
#ifdef DLCP_WIRE_X86_KERNELS
    if (cpu_has_f16c()) {
      s.paths[s.count++] = ConversionPath::kF16c;
      // __builtin_cpu_supports also checks that the OS saves the 256-bit registers.
      if (__builtin_cpu_supports("avx2")) s.paths[s.count++] = ConversionPath::kAvx2;
    }
#endif
    return s;
  }();
  return cpu;
}

std::atomic<ConversionPath>& active_path() {
  static std::atomic<ConversionPath> path{supported().paths[supported().count - 1]};
  return path;
}

const ConversionKernels& kernels_of(ConversionPath path) {
  switch (path) {
#ifdef DLCP_WIRE_X86_KERNELS
    case ConversionPath::kF16c:
      return f16c_kernels();
    case ConversionPath::kAvx2:
      return avx2_kernels();
#endif
    default:
      return portable_kernels();
  }
}

}  // namespace

std::string_view to_string(ConversionPath path) {
  switch (path) {
    case ConversionPath::kPortable:
      return "portable";
    case ConversionPath::kF16c:
      return "f16c";
    case ConversionPath::kAvx2:
      return "avx2";
  }
  return "?";
}

std::span<const ConversionPath> supported_conversion_paths() {
  return std::span(supported().paths).first(supported().count);
}

ConversionPath conversion_path() {
  return active_path().load(std::memory_order_relaxed);
}

bool use_conversion_path(ConversionPath path) {
  const auto paths = supported_conversion_paths();
  if (std::find(paths.begin(), paths.end(), path) == paths.end()) return false;
  active_path().store(path, std::memory_order_relaxed);
  return true;
}

const ConversionKernels& conversion_kernels() {
  return kernels_of(conversion_path());
}

bool cpu_has_f16c() {
#ifdef DLCP_WIRE_X86_KERNELS
  static const bool has = [] {
    __builtin_cpu_init();  // may run before the constructors that would otherwise call it
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __builtin_cpu_supports("avx") && __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 &&
           (ecx & bit_F16C) != 0;
  }();
  return has;
#else
  return false;
#endif
}

}  // namespace dlcp::wire
