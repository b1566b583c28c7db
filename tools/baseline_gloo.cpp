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

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <limits>
#include <map>
#include <tuple>
#include <utility>

#include "dlcp/error.hpp"

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
  PreparedOptions(const std::shared_ptr<gloo::Context>& context,
                  gloo::AllreduceOptions::Algorithm algorithm, float* data, std::size_t count,
                  std::uint32_t tag)
      : options_(context) {
    options_.setAlgorithm(algorithm);
    options_.setOutput(data, count);  // no input set: the output is reduced in place
    options_.setReduceFunction(
        static_cast<void (*)(void*, const void*, const void*, std::size_t)>(&gloo::sum<float>));
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

}  // namespace

struct GlooAllreduce::State {
  int rank = 0;
  int size = 0;
  std::shared_ptr<gloo::transport::Device> device;
  std::shared_ptr<gloo::rendezvous::Context> context;
  std::map<std::tuple<const float*, std::size_t, std::string>, std::unique_ptr<PreparedAllreduce>>
      prepared;
  std::uint32_t next_tag = 1;

  std::unique_ptr<PreparedAllreduce> prepare(std::span<float> values,
                                             const std::string& algorithm) {
    const std::vector<float*> buffers{values.data()};
    const auto count = checked_count(values.size());
    auto old_style = [&](std::unique_ptr<gloo::Algorithm> built) {
      return std::make_unique<PreparedAlgorithm>(std::move(built));
    };
    if (algorithm == "ring") {
      return old_style(std::make_unique<gloo::AllreduceRing<float>>(context, buffers, count));
    }
    if (algorithm == "ring_chunked") {
      return old_style(
          std::make_unique<gloo::AllreduceRingChunked<float>>(context, buffers, count));
    }
    if (algorithm == "halving_doubling") {
      return old_style(
          std::make_unique<gloo::AllreduceHalvingDoubling<float>>(context, buffers, count));
    }
    if (algorithm == "new_ring") {
      return std::make_unique<PreparedOptions>(context, gloo::AllreduceOptions::Algorithm::RING,
                                               values.data(), values.size(), next_tag++);
    }
    if (algorithm == "new_bcube") {
      return std::make_unique<PreparedOptions>(context, gloo::AllreduceOptions::Algorithm::BCUBE,
                                               values.data(), values.size(), next_tag++);
    }
    throw Error(ErrorCode::kInvalidArgument, -1,
                "gloo all-reduce: unknown algorithm '" + algorithm +
                    "' (new_ring, ring_chunked, halving_doubling, ring, new_bcube)");
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
  auto key = std::make_tuple(static_cast<const float*>(values.data()), values.size(), algorithm);
  auto found = state_->prepared.find(key);
  try {
    if (found == state_->prepared.end()) {
      if (state_->prepared.size() >= kMaxPreparedAllreduces) state_->prepared.clear();
      found = state_->prepared.emplace(std::move(key), state_->prepare(values, algorithm)).first;
    }
    found->second->run();
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw Error(ErrorCode::kAborted, -1,
                "gloo all-reduce (" + algorithm + ", " + std::to_string(values.size()) +
                    " floats) failed on rank " + std::to_string(state_->rank) + ": " + e.what());
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
