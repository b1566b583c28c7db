// Which server takes which part of each layer's gradient in the parameter-server workload.
#pragma once

#include <cstdint>
#include <vector>

#include "config.hpp"

namespace dlcp::sim {

struct ServerSlice {
  int layer = 0;
  int server = 0;  // index into the job's servers
  std::uint64_t bytes = 0;
};

// The slices of every layer (`layer_bytes`, whole float32 values, in layer order), layer by layer.
// Layer order and largest first cut layers larger than total / servers into slices no larger
// than that and give each slice to the server least loaded so far. Sharded cuts every layer as
// the library's parameter server cuts a buffer: server s takes part s of `servers` (whole blocks
// of `block_floats`, earlier servers taking the extra blocks); empty parts are left out.
std::vector<ServerSlice> server_slices(const std::vector<std::uint64_t>& layer_bytes, int servers,
                                       Slicing slicing, std::uint64_t block_floats);

// The library's block (one packet's floats) scaled like the gradients, at least one float, so that
// a scaled layer is cut into as many blocks as at full size.
std::uint64_t scaled_block_floats(std::uint32_t packet_floats, double size_scale);

}  // namespace dlcp::sim
