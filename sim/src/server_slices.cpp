#include "server_slices.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "library.hpp"

namespace dlcp::sim {

namespace {

std::vector<ServerSlice> sharded(const std::vector<std::uint64_t>& layer_bytes, int servers,
                                 std::uint64_t block_floats) {
  std::vector<ServerSlice> slices;
  for (std::size_t layer = 0; layer < layer_bytes.size(); ++layer) {
    for (int s = 0; s < servers; ++s) {
      const library::FloatRange part =
          library::aligned_part(layer_bytes[layer] / 4, static_cast<std::size_t>(servers),
                                block_floats, static_cast<std::size_t>(s));
      if (part.size > 0) slices.push_back(ServerSlice{static_cast<int>(layer), s, part.size * 4});
    }
  }
  return slices;
}

// A server may end up a whole slice above another in layer order (at 144 hosts 59 to 143 KB per
// worker, mean 113 KB; docs/simulation.md, "Where dlcp's tail comes from"). Largest first (the
// classic LPT rule) keeps them within 10% there.
std::vector<ServerSlice> least_loaded(const std::vector<std::uint64_t>& layer_bytes, int servers,
                                      bool largest_first) {
  const std::uint64_t total =
      std::accumulate(layer_bytes.begin(), layer_bytes.end(), std::uint64_t{0});
  const std::uint64_t limit =
      std::max<std::uint64_t>(4, total / static_cast<std::uint64_t>(servers));
  std::vector<ServerSlice> slices;
  for (std::size_t layer = 0; layer < layer_bytes.size(); ++layer) {
    const std::uint64_t bytes = layer_bytes[layer];
    const std::uint64_t count = (bytes + limit - 1) / limit;
    for (std::uint64_t i = 0; i < count; ++i) {
      const std::uint64_t part = (bytes / 4 / count + (i < bytes / 4 % count ? 1 : 0)) * 4;
      slices.push_back(ServerSlice{static_cast<int>(layer), 0, std::max<std::uint64_t>(4, part)});
    }
  }
  std::vector<std::size_t> order(slices.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  if (largest_first) {
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return slices[a].bytes > slices[b].bytes;
    });
  }
  std::vector<std::uint64_t> load(static_cast<std::size_t>(servers), 0);
  for (const std::size_t index : order) {
    const auto least = std::min_element(load.begin(), load.end()) - load.begin();
    load[static_cast<std::size_t>(least)] += slices[index].bytes;
    slices[index].server = static_cast<int>(least);
  }
  return slices;
}

}  // namespace

std::uint64_t scaled_block_floats(std::uint32_t packet_floats, double size_scale) {
  return std::max<std::uint64_t>(
      1, static_cast<std::uint64_t>(std::llround(packet_floats * size_scale)));
}

std::vector<ServerSlice> server_slices(const std::vector<std::uint64_t>& layer_bytes, int servers,
                                       Slicing slicing, std::uint64_t block_floats) {
  switch (slicing) {
    case Slicing::kSharded:
      return sharded(layer_bytes, servers, block_floats);
    case Slicing::kLargestFirst:
      return least_loaded(layer_bytes, servers, true);
    case Slicing::kLayerOrder:
      break;
  }
  return least_loaded(layer_bytes, servers, false);
}

}  // namespace dlcp::sim
