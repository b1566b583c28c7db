// `dlcp bench train`: emulated data-parallel training iterations of a real model's gradient
// profile, over one communication system, with ranks as local processes on loopback or spread
// over the testbed's hosts (testbed::host_of_process). The launcher gathers every rank's iteration
// times through a file store.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dlcp/options.hpp"
#include "system_choice.hpp"  // is_dlcp_system
#include "testbed_options.hpp"
#include "workload/iteration_plan.hpp"

namespace dlcp::tools {

struct TrainBenchOptions {
  std::string system = "dlcp-ps";  // dlcp-ps | dlcp-ring | dlcp-tar | gloo | mpi
  std::string model = "resnet50";
  int ranks = 4;
  int servers = 0;  // dlcp-ps: parameter servers, co-located one per host; 0 = one per worker
  int iters = 30;
  int warmup = 3;
  workload::PlanOptions plan;
  double loss_budget = 0.05;  // dlcp only
  // How gradients travel: any dtype for dlcp; fp16 for gloo is PyTorch DDP's
  // fp16_compress_hook; mpi float32 only (system_choice.hpp).
  WireDtype wire = WireDtype::kFloat32;
  // Ablations: each turns one of dlcp's mechanisms off.
  bool no_spray = false;           // one path per peer, hashed by ECMP like a TCP flow
  bool no_priority = false;        // every bucket in the least urgent class, beside best effort
  bool no_loss_tolerance = false;  // loss budget 0: every packet must arrive
  bool no_parity = false;          // no parity packets, whatever parity_members says
  // dlcp's CommunicatorOptions::topology: "auto" (hierarchical where the workers span several
  // hosts and a host holds several), "flat" or "hierarchical".
  std::string topology = "auto";
  double drop = 0;  // injected receive-path loss (loopback only, dlcp only)
  int concurrent = 4;
  int deadline_ms = 30000;
  // dlcp's control connections' least retransmission timeout (TransportOptions::control_rto_min);
  // 0 keeps the kernel's 200 ms, as on kernels without TCP_RTO_MIN_US.
  int control_rto_min_us = 5000;
  // dlcp's TransportOptions::parity_members: a parity packet per this many protected packets
  // (0: none).
  int parity_members = 0;
  int timeout_s = 300;
  bool verbose = true;

  // Label used in tables and JSON: the system, its wire dtype unless fp32, then its ablation
  // and a topology other than auto ("dlcp-ring bf16 no-spray", "dlcp-ring flat").
  std::string label() const;
};

// The testbed the ranks run in, or nullptr for loopback.
nlohmann::json run_train_bench(const TrainBenchOptions& options,
                               const testbed::TestbedOptions* network);

// Hidden per-rank entry point (`dlcp bench train-rank`).
int run_train_bench_rank(const TrainBenchOptions& options, int* argc, char*** argv);

std::vector<std::string> train_bench_flags(const TrainBenchOptions& options);

}  // namespace dlcp::tools
