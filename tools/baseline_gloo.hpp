// Baseline: Gloo's own CPU all-reduce over its TCP transport, for `dlcp bench allreduce`.
//
//   dlcp::tools::GlooAllreduce gloo(store, rank, size, "127.0.0.1");
//   for (const auto& algorithm : GlooAllreduce::algorithms()) gloo.allreduce(values, algorithm);
//   gloo.allreduce_fp16_average(values, "new_ring");  // the 16-bit baseline: values / size, summed
//
// Gloo's headers stay out of this header so that the harness compiles without them.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "dlcp/store.hpp"

namespace dlcp::tools {

// One rank's Gloo context over TCP (gloo::transport::tcp), rendezvous through a dlcp::Store.
// Not thread-safe: one thread per rank drives it, and every rank must make the same calls in the
// same order (Gloo matches ranks' operations by the order they are set up).
class GlooAllreduce {
 public:
  // Binds a TCP device to `host` (an interface address, e.g. 127.0.0.1) and connects a full mesh
  // with the other ranks; rendezvous keys live under `key_prefix` in the store so that several
  // contexts can share one store. Throws dlcp::Error (kConnect) when the mesh cannot be built.
  GlooAllreduce(dlcp::Store& store, int rank, int size, const std::string& host,
                const std::string& key_prefix = "gloo");
  ~GlooAllreduce();
  GlooAllreduce(const GlooAllreduce&) = delete;
  GlooAllreduce& operator=(const GlooAllreduce&) = delete;

  // The algorithms worth trying for large buffers (bandwidth-optimal for any number of ranks):
  //   "new_ring"          gloo::allreduce() with the RING algorithm: segmented, pipelined
  //                       reduce-scatter + all-gather on unbound buffers (what PyTorch's
  //                       ProcessGroupGloo runs for CPU tensors)
  //   "ring_chunked"      gloo::AllreduceRingChunked: pipelined reduce-scatter + all-gather ring
  //   "halving_doubling"  gloo::AllreduceHalvingDoubling: recursive halving/doubling
  // allreduce() also accepts, without listing them:
  //   "ring"       gloo::AllreduceRing: the whole buffer goes round the ring size-1 times
  //   "new_bcube"  gloo::allreduce() with BCUBE: slower than the above on loopback
  // gloo::AllreduceBcube is not offered: in this Gloo (Debian 0.0~git20220518) it returns wrong
  // sums for rank counts that are not powers of 2, and now and then (about 1 run in 30) for 4.
  static std::vector<std::string> algorithms();

  // In-place sum all-reduce of `values` with the named algorithm. The algorithm object for each
  // (buffer, length, algorithm) is built on first use and reused, so repeated calls on the same
  // buffer measure Gloo's steady state. Throws dlcp::Error (kInvalidArgument) for an unknown
  // algorithm or a buffer Gloo cannot address, and (kAborted) when Gloo fails mid-operation.
  void allreduce(std::span<float> values, const std::string& algorithm);

  // The 16-bit baseline, as PyTorch DDP's fp16_compress_hook runs it on Gloo: divides `values` by
  // size(), rounds them to IEEE half (gloo::float16), sum-all-reduces the halves with the named
  // algorithm (each addition rounded to half, as gloo::sum<float16> does), half the bytes of
  // allreduce(), and widens the result back into `values`, which then hold the average (within
  // half precision; the same on every rank). The half buffer and algorithm object are cached per
  // (values, algorithm) like allreduce()'s. Throws as allreduce() does.
  void allreduce_fp16_average(std::span<float> values, const std::string& algorithm);

  void barrier();

  int rank() const;
  int size() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace dlcp::tools
