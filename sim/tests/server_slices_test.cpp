// The parameter server's slices on fixed layer sizes: least-loaded assignment in layer order and
// largest first, and the library's sharding of every layer over all servers.
#include "server_slices.hpp"

#include <gtest/gtest.h>

#include <tuple>

namespace dlcp::sim {

bool operator==(const ServerSlice& a, const ServerSlice& b) {
  return std::tie(a.layer, a.server, a.bytes) == std::tie(b.layer, b.server, b.bytes);
}

namespace {

TEST(ServerSlices, LayerOrderGivesEachLayerToTheLeastLoadedServer) {
  // total 880 bytes over 2 servers: no layer is above 440, so none is cut.
  const auto slices = server_slices({400, 40, 40, 400}, 2, Slicing::kLayerOrder, 1);
  EXPECT_EQ(slices, (std::vector<ServerSlice>{{0, 0, 400}, {1, 1, 40}, {2, 1, 40}, {3, 1, 400}}));
}

TEST(ServerSlices, LargestFirstBalancesTheSameLayers) {
  const auto slices = server_slices({400, 40, 40, 400}, 2, Slicing::kLargestFirst, 1);
  EXPECT_EQ(slices, (std::vector<ServerSlice>{{0, 0, 400}, {1, 0, 40}, {2, 1, 40}, {3, 1, 400}}));
}

TEST(ServerSlices, LayersAboveTheMeanShareAreCutIntoEqualSlices) {
  // total 880 bytes: the 800-byte layer is cut into two slices of 100 floats.
  const auto slices = server_slices({800, 80}, 2, Slicing::kLayerOrder, 1);
  EXPECT_EQ(slices, (std::vector<ServerSlice>{{0, 0, 400}, {0, 1, 400}, {1, 0, 80}}));
}

TEST(ServerSlices, ShardedCutsEveryLayerInWholeBlocksAsTheLibraryDoes) {
  // 10 floats in blocks of 2: 5 blocks, 3 to server 0 and 2 to server 1. 3 floats: 2 blocks, the
  // second short. 1 float: one block, so servers 1 and 2 get nothing of it.
  EXPECT_EQ(server_slices({40, 12}, 2, Slicing::kSharded, 2),
            (std::vector<ServerSlice>{{0, 0, 24}, {0, 1, 16}, {1, 0, 8}, {1, 1, 4}}));
  EXPECT_EQ(server_slices({4}, 3, Slicing::kSharded, 2), (std::vector<ServerSlice>{{0, 0, 4}}));
}

TEST(ServerSlices, ShardedKeepsEveryByte) {
  const std::vector<std::uint64_t> layers{4, 36, 4000, 40004, 123456};
  for (int servers : {1, 2, 6, 18}) {
    std::uint64_t total = 0;
    for (const ServerSlice& s : server_slices(layers, servers, Slicing::kSharded, 45)) {
      EXPECT_GT(s.bytes, 0u);
      EXPECT_LT(s.server, servers);
      total += s.bytes;
    }
    EXPECT_EQ(total, 4u + 36 + 4000 + 40004 + 123456) << servers << " servers";
  }
}

TEST(ServerSlices, TheBlockShrinksWithTheGradients) {
  EXPECT_EQ(scaled_block_floats(2233, 1.0), 2233u);  // a 9000-byte frame's floats, full size
  EXPECT_EQ(scaled_block_floats(2233, 0.02), 45u);   // 44.66, rounded
  EXPECT_EQ(scaled_block_floats(2233, 0.01), 22u);
  EXPECT_EQ(scaled_block_floats(2233, 1e-6), 1u);  // never below one float
}

}  // namespace
}  // namespace dlcp::sim
