// The communication systems the benchmarks and the demo compare, with the dtype their gradients
// travel in: every dtype for dlcp; float32 and the fp16 baseline (PyTorch DDP's
// fp16_compress_hook) for Gloo, which has no bfloat16; float32 only for Open MPI.
//
//   parse_system_choice("dlcp-ring:bf16")   -> {"dlcp-ring", kBfloat16}, label "dlcp-ring bf16"
//   parse_system_choice("gloo:fp16")        -> {"gloo", kFloat16}, label "gloo fp16"
//   parse_system_choice("gloo:bf16")        -> throws Error(kInvalidArgument)
#pragma once

#include <string>

#include "dlcp/options.hpp"

namespace dlcp::tools {

// dlcp-ps, dlcp-ring or dlcp-tar.
bool is_dlcp_system(const std::string& system);

// Throws Error(kInvalidArgument) naming `system` when it cannot send `wire`: bf16 on Gloo, or a
// 16-bit dtype on Open MPI. `system` is "gloo", "mpi" or one of dlcp's (under any name: the
// all-reduce benchmark calls them ring, tar and ps), which take every dtype.
void check_wire_supported(const std::string& system, WireDtype wire);

// "<system>" for float32, "<system> <wire>" otherwise: how tables and JSON name a run.
std::string wire_label(const std::string& system, WireDtype wire);

struct SystemChoice {
  std::string system;  // gloo | mpi | dlcp-ps | dlcp-ring | dlcp-tar
  WireDtype wire = WireDtype::kFloat32;

  std::string label() const { return wire_label(system, wire); }
};

// Gloo sending as many bits as `wire`: float32 for float32, its fp16 baseline for either 16-bit
// dtype. A 16-bit system measured against float32 Gloo would credit the halved bytes to dlcp.
SystemChoice gloo_of_the_same_width(WireDtype wire);

// "<system>" or "<system>:<wire>" (wire fp32, bf16 or fp16); throws Error(kInvalidArgument)
// naming `text` for an unknown system or dtype, or a dtype the system cannot send.
SystemChoice parse_system_choice(const std::string& text);

}  // namespace dlcp::tools
