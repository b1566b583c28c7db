// Baseline: Open MPI's MPI_Allreduce, forced onto its TCP transport or through shared memory on
// one host, for `dlcp bench allreduce`.
//
//   $ mpirun <mpirun_command(2, {})...> dlcp bench allreduce ...
//   dlcp::tools::MpiSession mpi(&argc, &argv);
//   mpi.allreduce(values);
//
// mpi.h stays out of this header so that the harness compiles without it.
#pragma once

#include <span>
#include <string>
#include <vector>

namespace dlcp::tools {

// MPI_Init/MPI_Finalize lifetime; ranks are launched by mpirun. One per process.
class MpiSession {
 public:
  // Initialises MPI unless something else already did (then it also leaves finalising to that).
  // MPI errors on MPI_COMM_WORLD are returned, not fatal, so that they surface as exceptions.
  MpiSession(int* argc, char*** argv);
  MpiSession();
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }

  // In-place MPI_Allreduce(MPI_IN_PLACE, ..., MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD). Buffers longer
  // than MPI's int count are reduced in int-sized pieces. Throws dlcp::Error (kAborted) on failure.
  void allreduce(std::span<float> values);
  void barrier();

  // True inside a process started by mpirun (Open MPI, or a PMI/PMIx launcher).
  static bool launched_by_mpirun();

 private:
  bool owns_mpi_ = false;
  int rank_ = 0;
  int size_ = 1;
};

// How Open MPI's ranks reach each other: forced onto TCP (the fair baseline across hosts, and on
// one host the same sockets dlcp uses); through its shared-memory transport, as Open MPI runs by
// default when ranks share a host (one host only); or both, as by default across hosts of several
// ranks each: TCP between hosts, shared memory between the ranks one host's daemon started.
enum class MpiFabric { kTcp, kSharedMemory, kTcpAndSharedMemory };

// The MCA settings that keep Open MPI off shared memory (vader/sm), UCX and other fabrics: the ob1
// point-to-point layer over the tcp btl on loopback, and no shared-memory collectives.
std::vector<std::string> mpi_tcp_only_arguments(const std::string& interfaces = "lo");

// The MCA settings for ranks on one host: the ob1 point-to-point layer over vader (Open MPI's
// shared-memory btl, single-copy where the kernel allows) and self; the default collectives.
std::vector<std::string> mpi_shared_memory_arguments();

// Across hosts of several ranks each: ob1 over tcp (on these interfaces or subnets) between hosts
// and vader within one, and the default collectives.
std::vector<std::string> mpi_tcp_and_shared_memory_arguments(const std::string& interfaces);

// The mpirun command prefix that starts `ranks` local processes with Open MPI on `fabric` (forced
// onto TCP by default, see mpi_tcp_only_arguments), allowed to run as root, oversubscribed when
// ranks outnumber cores, unbound, and passing the named environment variables through with -x.
// Append the program and its arguments. Ranks on other hosts: one per address, started there by
// `rsh_agent` (called as `agent ADDRESS COMMAND`, e.g. a script that enters the testbed host's
// network namespace).
struct MpiHosts {
  std::vector<std::string> addresses;
  std::string rsh_agent;
  std::string interfaces;  // btl/oob interfaces or subnets, e.g. "10.0.0.0/24"
};
// Shared memory alone spans one host: with `hosts` it throws dlcp::Error (kInvalidArgument), as
// does kTcpAndSharedMemory without them.
std::vector<std::string> mpirun_command(int ranks, const std::vector<std::string>& pass_env,
                                        const MpiHosts* hosts = nullptr,
                                        MpiFabric fabric = MpiFabric::kTcp);

}  // namespace dlcp::tools
