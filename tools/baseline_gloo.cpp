// Gloo baseline: a TCP device, a full mesh through the dlcp store, and cached algorithm objects.
#include "baseline_gloo.hpp"

#include <gloo/allreduce.h>
#include <gloo/allreduce_halving_doubling.h>
#include <gloo/allreduce_ring.h>
#include <gloo/allreduce_ring_chunked.h>
#include <gloo/barrier.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/types.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <limits>
#include <map>
#include <tuple>
#include <utility>

#include "dlcp/error.hpp"
#include "wire/values.hpp"

namespace dlcp::tools {
namespace {

// Gloo's rendezvous speaks std::vector<char> values; dlcp's store speaks std::string.
class GlooStoreAdapter final : public gloo::rendezvous::Store {
 public:
  GlooStoreAdapter(dlcp::Store& store, std::string prefix)
      : store_(store), prefix_(std::move(prefix)) {}

  void set(const std::string& key, const std::vector<char>& data) override {
    store_.set(prefixed(key), std::string(data.begin(), data.end()));
  }

  std::vector<char> get(const std::string& key) override {
    const std::string value = store_.get(prefixed(key));
    return {value.begin(), value.end()};
  }

  void wait(const std::vector<std::string>& keys) override { store_.wait(prefixed(keys)); }

  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override {
    store_.wait(prefixed(keys), timeout);
  }

 private:
  std::string prefixed(const std::string& key) const { return prefix_ + "/" + key; }
  std::vector<std::string> prefixed(const std::vector<std::string>& keys) const {
    std::vector<std::string> out;
    out.reserve(keys.size());
    for (const auto& key : keys) out.push_back(prefixed(key));
    return out;
  }

  dlcp::Store& store_;
  std::string prefix_;
};

// One prepared all-reduce on one buffer; run() may be called any number of times.
class PreparedAllreduce {
 public:
  virtual ~PreparedAllreduce() = default;
  virtual void run() = 0;
};

// Old-style Gloo algorithms (gloo::Algorithm) allocate scratch space and register transport
// buffers in their constructor, so they are built once and run many times.
class PreparedAlgorithm final : public PreparedAllreduce {
 public:
  explicit PreparedAlgorithm(std::unique_ptr<gloo::Algorithm> algorithm)
      : algorithm_(std::move(algorithm)) {}
  void run() override { algorithm_->run(); }

 private:
  std::unique_ptr<gloo::Algorithm> algorithm_;
};

// New-style gloo::allreduce() takes options that wrap the caller's buffer in unbound buffers.
class PreparedOptions final : public PreparedAllreduce {
 public:
  template <typename T>
  PreparedOptions(const std::shared_ptr<gloo::Context>& context,
                  gloo::AllreduceOptions::Algorithm algorithm, T* data, std::size_t count,
                  void (*sum)(void*, const void*, const void*, std::size_t), std::uint32_t tag)
      : options_(context) {
    options_.setAlgorithm(algorithm);
    options_.setOutput(data, count);  // no input set: the output is reduced in place
    options_.setReduceFunction(sum);
    options_.setTag(tag);
  }
  void run() override { gloo::allreduce(options_); }

 private:
  gloo::AllreduceOptions options_;
};

// Gloo's old-style algorithms count elements in an int.
int checked_count(std::size_t count) {
  if (count > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
    throw Error(ErrorCode::kInvalidArgument, -1,
                "gloo all-reduce: " + std::to_string(count) +
                    " floats is more than Gloo's algorithms can address (int count)");
  }
  return static_cast<int>(count);
}

// Scratch buffers of old algorithms cost memory; a benchmark reuses a handful of buffers, so a
// small bound is plenty. Every rank clears at the same call because all ranks call alike.
constexpr std::size_t kMaxPreparedAllreduces = 16;

// The fp16 baseline's arithmetic. PyTorch converts with the CPU's vector instructions, and Gloo
// built with GLOO_USE_AVX sums halves with them too (Debian's is built without it: its
// gloo::sum<float16> converts one value at a time). So does this baseline where the CPU has F16C,
// lest slow arithmetic flatter dlcp; elsewhere Gloo's scalar routines. Every path computes in
// float32 and rounds to nearest even, so all give the same halves.
#if defined(__x86_64__) || defined(__i386__)
// Each returns how many leading values it did (whole vectors of 8); the caller does the rest.
__attribute__((target("avx,f16c"))) std::size_t divide_to_half_f16c(const float* in, float divisor,
                                                                    gloo::float16* out,
                                                                    std::size_t count) {
  const __m256 divisors = _mm256_set1_ps(divisor);
  std::size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m256 divided = _mm256_div_ps(_mm256_loadu_ps(in + i), divisors);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                     _mm256_cvtps_ph(divided, _MM_FROUND_TO_NEAREST_INT));
  }
  return i;
}

__attribute__((target("avx,f16c"))) __m256 load_half_f16c(const gloo::float16* in) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in)));
}

__attribute__((target("avx,f16c"))) std::size_t widen_half_f16c(const gloo::float16* in, float* out,
                                                                std::size_t count) {
  std::size_t i = 0;
  for (; i + 8 <= count; i += 8) _mm256_storeu_ps(out + i, load_half_f16c(in + i));
  return i;
}

__attribute__((target("avx,f16c"))) std::size_t sum_half_f16c(gloo::float16* out,
                                                              const gloo::float16* a,
                                                              const gloo::float16* b,
                                                              std::size_t count) {
  std::size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m256 sum = _mm256_add_ps(load_half_f16c(a + i), load_half_f16c(b + i));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                     _mm256_cvtps_ph(sum, _MM_FROUND_TO_NEAREST_INT));
  }
  return i;
}
#else
std::size_t divide_to_half_f16c(const float*, float, gloo::float16*, std::size_t) {
  return 0;
}
std::size_t widen_half_f16c(const gloo::float16*, float*, std::size_t) {
  return 0;
}
std::size_t sum_half_f16c(gloo::float16*, const gloo::float16*, const gloo::float16*, std::size_t) {
  return 0;
}
#endif

// out[i] = half(in[i] / divisor): the float32 value divided first, then rounded once.
void divide_to_half(std::span<const float> in, float divisor, std::span<gloo::float16> out) {
  std::size_t i =
      wire::cpu_has_f16c() ? divide_to_half_f16c(in.data(), divisor, out.data(), in.size()) : 0;
  for (; i < in.size(); ++i) out[i] = gloo::cpu_float2half_rn(in[i] / divisor);
}

void widen_half(std::span<const gloo::float16> in, std::span<float> out) {
  std::size_t i = wire::cpu_has_f16c() ? widen_half_f16c(in.data(), out.data(), in.size()) : 0;
  for (; i < in.size(); ++i) out[i] = gloo::cpu_half2float(in[i]);
}

// out = a + b for halves (out may be a): the sum Gloo's algorithms reduce fp16 buffers with.
void sum_half(void* out, const void* a, const void* b, std::size_t count) {
  auto* sums = static_cast<gloo::float16*>(out);
  const auto* x = static_cast<const gloo::float16*>(a);
  const auto* y = static_cast<const gloo::float16*>(b);
  const std::size_t done = wire::cpu_has_f16c() ? sum_half_f16c(sums, x, y, count) : 0;
  gloo::sum<gloo::float16>(sums + done, x + done, y + done, count - done);
}

void sum_half_in_place(gloo::float16* a, const gloo::float16* b, std::size_t count) {
  sum_half(a, a, b, count);
}

// The sum for each element type, in the two forms Gloo's algorithms take.
using ReduceFunction = void (*)(void*, const void*, const void*, std::size_t);

template <typename T>
struct Sum;

template <>
struct Sum<float> {
  static ReduceFunction function() { return &gloo::sum<float>; }
  static const gloo::ReductionFunction<float>* reduction() {
    return gloo::ReductionFunction<float>::sum;
  }
};

template <>
struct Sum<gloo::float16> {
  static ReduceFunction function() { return &sum_half; }
  static const gloo::ReductionFunction<gloo::float16>* reduction() {
    static const gloo::ReductionFunction<gloo::float16> sum(gloo::SUM, &sum_half_in_place);
    return &sum;
  }
};

// A prepared all-reduce and, for the fp16 baseline, the half buffer it reduces (registered with
// Gloo, so it lives as long as the algorithm object).
struct PreparedEntry {
  std::vector<gloo::float16> half;
  std::unique_ptr<PreparedAllreduce> allreduce;
};

}  // namespace

struct GlooAllreduce::State {
  int rank = 0;
  int size = 0;
  std::shared_ptr<gloo::transport::Device> device;
  std::shared_ptr<gloo::rendezvous::Context> context;
  // Keyed by the caller's buffer, its length, the algorithm and whether it travels in fp16.
  std::map<std::tuple<const float*, std::size_t, std::string, bool>, PreparedEntry> prepared;
  std::uint32_t next_tag = 1;

  template <typename T>
  std::unique_ptr<PreparedAllreduce> prepare(std::span<T> values, const std::string& algorithm) {
    const std::vector<T*> buffers{values.data()};
    const auto count = checked_count(values.size());
    auto old_style = [&](std::unique_ptr<gloo::Algorithm> built) {
      return std::make_unique<PreparedAlgorithm>(std::move(built));
    };
    const auto* sum = Sum<T>::reduction();
    if (algorithm == "ring") {
      return old_style(std::make_unique<gloo::AllreduceRing<T>>(context, buffers, count, sum));
    }
    if (algorithm == "ring_chunked") {
      return old_style(
          std::make_unique<gloo::AllreduceRingChunked<T>>(context, buffers, count, sum));
    }
    if (algorithm == "halving_doubling") {
      return old_style(
          std::make_unique<gloo::AllreduceHalvingDoubling<T>>(context, buffers, count, sum));
    }
    if (algorithm == "new_ring") {
      return std::make_unique<PreparedOptions>(context, gloo::AllreduceOptions::Algorithm::RING,
                                               values.data(), values.size(), Sum<T>::function(),
                                               next_tag++);
    }
    if (algorithm == "new_bcube") {
      return std::make_unique<PreparedOptions>(context, gloo::AllreduceOptions::Algorithm::BCUBE,
                                               values.data(), values.size(), Sum<T>::function(),
                                               next_tag++);
    }
    throw Error(ErrorCode::kInvalidArgument, -1,
                "gloo all-reduce: unknown algorithm '" + algorithm +
                    "' (new_ring, ring_chunked, halving_doubling, ring, new_bcube)");
  }

  // The cached entry for this call, prepared on first use.
  PreparedEntry& entry(std::span<float> values, const std::string& algorithm, bool fp16) {
    auto key =
        std::make_tuple(static_cast<const float*>(values.data()), values.size(), algorithm, fp16);
    auto found = prepared.find(key);
    if (found != prepared.end()) return found->second;
    if (prepared.size() >= kMaxPreparedAllreduces) prepared.clear();
    PreparedEntry built;
    if (fp16) {
      built.half.resize(values.size());
      built.allreduce = prepare(std::span<gloo::float16>(built.half), algorithm);
    } else {
      built.allreduce = prepare(values, algorithm);
    }
    // Moving the vector keeps its storage, which the algorithm has registered.
    return prepared.emplace(std::move(key), std::move(built)).first->second;
  }

  [[noreturn]] void rethrow_as_error(const std::string& what, std::size_t floats) const {
    try {
      throw;
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      throw Error(ErrorCode::kAborted, -1,
                  "gloo all-reduce (" + what + ", " + std::to_string(floats) +
                      " floats) failed on rank " + std::to_string(rank) + ": " + e.what());
    }
  }
};

GlooAllreduce::GlooAllreduce(dlcp::Store& store, int rank, int size, const std::string& host,
                             const std::string& key_prefix)
    : state_(std::make_unique<State>()) {
  if (size < 1 || rank < 0 || rank >= size) {
    throw Error(ErrorCode::kInvalidArgument, -1,
                "gloo: rank " + std::to_string(rank) + " of size " + std::to_string(size));
  }
  state_->rank = rank;
  state_->size = size;
  try {
    gloo::transport::tcp::attr attr;
    attr.hostname = host;
    state_->device = gloo::transport::tcp::CreateDevice(attr);
    state_->context = std::make_shared<gloo::rendezvous::Context>(rank, size);
    state_->context->setTimeout(store.timeout());
    GlooStoreAdapter adapter(store, key_prefix);
    state_->context->connectFullMesh(adapter, state_->device);
  } catch (const Error&) {
    throw;  // the store's own error (e.g. kDeadline) already says what failed
  } catch (const std::exception& e) {
    throw Error(ErrorCode::kConnect, -1,
                "gloo: rank " + std::to_string(rank) + " could not connect over TCP on " + host +
                    ": " + e.what());
  }
}

GlooAllreduce::~GlooAllreduce() = default;

std::vector<std::string> GlooAllreduce::algorithms() {
  return {"new_ring", "ring_chunked", "halving_doubling"};
}

void GlooAllreduce::allreduce(std::span<float> values, const std::string& algorithm) {
  try {
    state_->entry(values, algorithm, false).allreduce->run();
  } catch (...) {
    state_->rethrow_as_error(algorithm, values.size());
  }
}

void GlooAllreduce::allreduce_fp16_average(std::span<float> values, const std::string& algorithm) {
  try {
    PreparedEntry& entry = state_->entry(values, algorithm, true);
    // fp16_compress_hook divides by the world size so that the sum of halves cannot overflow
    // where the average would not. (PyTorch rounds to half before dividing, rounding twice; this
    // divides in float32 and rounds once, which differs by at most one half-precision step.)
    divide_to_half(values, static_cast<float>(state_->size), entry.half);
    entry.allreduce->run();
    widen_half(entry.half, values);
  } catch (...) {
    state_->rethrow_as_error(algorithm + " in fp16", values.size());
  }
}

void GlooAllreduce::barrier() {
  try {
    gloo::BarrierOptions options(state_->context);
    gloo::barrier(options);
  } catch (const std::exception& e) {
    throw Error(ErrorCode::kAborted, -1,
                "gloo barrier failed on rank " + std::to_string(state_->rank) + ": " + e.what());
  }
}

int GlooAllreduce::rank() const {
  return state_->rank;
}
int GlooAllreduce::size() const {
  return state_->size;
}

}  // namespace dlcp::tools
