// Started by baseline_mpi_test through mpirun_command(): every rank all-reduces a few buffers of
// small integers through dlcp::tools::MpiSession and checks the exact sums. Rank 0 prints one
// line per buffer; the exit status is non-zero when any rank saw a wrong element.
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <vector>

#include "baseline_mpi.hpp"

namespace {

float input_value(int rank, std::size_t index) {
  return static_cast<float>((rank + 1) * static_cast<int>(index % 251 + 1));
}

float expected_sum(int size, std::size_t index) {
  return static_cast<float>(size * (size + 1) / 2 * static_cast<int>(index % 251 + 1));
}

}  // namespace

int main(int argc, char** argv) {
  try {
    dlcp::tools::MpiSession mpi(&argc, &argv);
    if (!dlcp::tools::MpiSession::launched_by_mpirun()) {
      std::fprintf(stderr, "mpi_allreduce_probe: not started by mpirun\n");
      return 2;
    }
    // Shows that mpirun_command() passes the environment through (-x).
    if (const char* marker = std::getenv("DLCP_PROBE_MARKER");
        marker != nullptr && mpi.rank() == 0) {
      std::printf("rank 0 marker %s\n", marker);
    }
    int failures = 0;
    // Up to 4 MiB: large enough for the tcp btl's rendezvous protocol and pipelining.
    for (const std::size_t length :
         {std::size_t{1}, std::size_t{1000}, std::size_t{(1u << 20) + 3}}) {
      std::vector<float> values(length);
      for (std::size_t i = 0; i < length; ++i) values[i] = input_value(mpi.rank(), i);
      mpi.allreduce(values);
      std::size_t wrong = 0;
      for (std::size_t i = 0; i < length; ++i) {
        if (values[i] != expected_sum(mpi.size(), i)) ++wrong;
      }
      if (wrong != 0) {
        ++failures;
        std::printf("rank %d size %d length %zu wrong %zu\n", mpi.rank(), mpi.size(), length,
                    wrong);
      } else if (mpi.rank() == 0) {
        std::printf("rank 0 size %d length %zu exact\n", mpi.size(), length);
      }
    }
    mpi.barrier();
    return failures == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mpi_allreduce_probe: %s\n", e.what());
    return 3;
  }
}
