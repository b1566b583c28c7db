// MPI baseline: session lifetime, in-place all-reduce, and the mpirun line that forces TCP.
#include "baseline_mpi.hpp"

#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1  // the C API is all we use; the C++ bindings only add warnings
#endif
#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <string>

#include "dlcp/error.hpp"

#ifndef DLCP_MPIEXEC
#define DLCP_MPIEXEC "mpirun"
#endif

namespace dlcp::tools {
namespace {

void check_mpi(int result, const char* call) {
  if (result == MPI_SUCCESS) return;
  char message[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(result, message, &length);
  throw Error(ErrorCode::kAborted, -1, std::string(call) + " failed: " + message);
}

}  // namespace

MpiSession::MpiSession() : MpiSession(nullptr, nullptr) {}

MpiSession::MpiSession(int* argc, char*** argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    // Serialized: the training benchmark drives MPI from one communication thread, not main.
    int provided = 0;
    check_mpi(MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
    owns_mpi_ = true;
  }
  check_mpi(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  check_mpi(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size");
}

MpiSession::~MpiSession() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (owns_mpi_ && !finalized) MPI_Finalize();
}

void MpiSession::allreduce(std::span<float> values) {
  std::size_t done = 0;
  while (done < values.size()) {
    const auto piece = std::min<std::size_t>(values.size() - done, INT_MAX);
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, values.data() + done, static_cast<int>(piece), MPI_FLOAT,
                            MPI_SUM, MPI_COMM_WORLD),
              "MPI_Allreduce");
    done += piece;
  }
}

void MpiSession::barrier() {
  check_mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
}

bool MpiSession::launched_by_mpirun() {
  for (const char* variable : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"}) {
    if (std::getenv(variable) != nullptr) return true;
  }
  return false;
}

std::vector<std::string> mpi_tcp_only_arguments(const std::string& interfaces) {
  return {// Point-to-point through ob1 (not ucx/cm), whose only transports are tcp and self (to
          // itself); vader, Open MPI's shared-memory btl, is thereby excluded.
          "--mca", "pml", "ob1", "--mca", "btl", "tcp,self",
          // Only these interfaces (loopback by default), for data and for the runtime's own
          // out-of-band channel.
          "--mca", "btl_tcp_if_include", interfaces, "--mca", "oob_tcp_if_include", interfaces,
          // Collectives that would use shared memory directly, whatever the btl.
          "--mca", "coll", "^sm,han"};
}

std::vector<std::string> mpi_shared_memory_arguments() {
  return {"--mca", "pml", "ob1", "--mca", "btl", "vader,self"};
}

std::vector<std::string> mpi_tcp_and_shared_memory_arguments(const std::string& interfaces) {
  return {"--mca",
          "pml",
          "ob1",
          "--mca",
          "btl",
          "tcp,vader,self",
          "--mca",
          "btl_tcp_if_include",
          interfaces,
          "--mca",
          "oob_tcp_if_include",
          interfaces};
}

std::vector<std::string> mpirun_command(int ranks, const std::vector<std::string>& pass_env,
                                        const MpiHosts* hosts, MpiFabric fabric) {
  if (ranks < 1) {
    throw Error(ErrorCode::kInvalidArgument, -1, "mpirun: " + std::to_string(ranks) + " ranks");
  }
  if (hosts != nullptr && fabric == MpiFabric::kSharedMemory) {
    throw Error(ErrorCode::kInvalidArgument, -1,
                "mpirun: shared memory joins ranks of one host only, not " +
                    std::to_string(hosts->addresses.size()) + " hosts");
  }
  if (hosts == nullptr && fabric == MpiFabric::kTcpAndSharedMemory) {
    throw Error(ErrorCode::kInvalidArgument, -1,
                "mpirun: TCP and shared memory together need the hosts' addresses");
  }
  std::vector<std::string> command{DLCP_MPIEXEC, "-np", std::to_string(ranks),
                                   // Harmless when not root; required when root (containers).
                                   "--allow-run-as-root",
                                   // More ranks than cores is the point on a small machine.
                                   "--oversubscribe",
                                   // Pinned ranks on 2 cores would fight over one core each.
                                   "--bind-to", "none"};
  std::vector<std::string> fabric_arguments;
  switch (fabric) {
    case MpiFabric::kTcp:
      fabric_arguments = mpi_tcp_only_arguments(hosts ? hosts->interfaces : "lo");
      break;
    case MpiFabric::kSharedMemory:
      fabric_arguments = mpi_shared_memory_arguments();
      break;
    case MpiFabric::kTcpAndSharedMemory:
      fabric_arguments = mpi_tcp_and_shared_memory_arguments(hosts->interfaces);
      break;
  }
  for (auto& argument : fabric_arguments) command.push_back(std::move(argument));
  if (hosts != nullptr) {
    std::string list;
    for (const auto& address : hosts->addresses) list += (list.empty() ? "" : ",") + address;
    // Each host's daemon connects straight back to mpirun (no tree routing through others).
    for (const std::string& argument :
         {std::string("--host"), list, std::string("--mca"), std::string("plm_rsh_agent"),
          hosts->rsh_agent, std::string("--mca"), std::string("routed"), std::string("direct")}) {
      command.push_back(argument);
    }
  }
  for (const auto& variable : pass_env) {
    command.push_back("-x");
    command.push_back(variable);
  }
  return command;
}

}  // namespace dlcp::tools
