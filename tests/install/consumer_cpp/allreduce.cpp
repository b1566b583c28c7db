// Two ranks (threads of this process, meeting through an in-memory store) all-reduce a buffer
// through the installed libdlcp; exits 0 only if both ranks hold the exact sum.
#include <dlcp/dlcp.hpp>

#include <cstdio>
#include <exception>
#include <thread>
#include <vector>

int main() {
  constexpr int kWorld = 2;
  constexpr std::size_t kCount = 100000;
  dlcp::HashStore store;
  int failures = 0;
  std::vector<std::thread> ranks;
  std::vector<int> rank_failed(kWorld, 1);
  for (int rank = 0; rank < kWorld; ++rank) {
    ranks.emplace_back([&, rank] {
      try {
        auto comm = dlcp::Communicator::create(store, rank, kWorld, {});
        std::vector<float> values(kCount);
        for (std::size_t i = 0; i < kCount; ++i) values[i] = static_cast<float>(rank + 1) * 0.5f;
        comm->allreduce(values).wait();
        bool exact = true;
        for (float v : values) exact = exact && v == 1.5f;
        rank_failed[rank] = exact ? 0 : 1;
      } catch (const std::exception& e) {
        std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
      }
    });
  }
  for (auto& t : ranks) t.join();
  for (int failed : rank_failed) failures += failed;
  std::printf("dlcp C++ consumer: %s\n", failures == 0 ? "all-reduce exact on 2 ranks" : "FAILED");
  return failures == 0 ? 0 : 1;
}
