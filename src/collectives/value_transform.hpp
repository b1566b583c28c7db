// What an all-reduce does to its values around the algorithm: the optional Hadamard rotation
// (CollectiveOptions::hadamard_rotation) and, for a 16-bit wire, the rounding of this rank's
// input, with error feedback (CollectiveOptions::error_feedback).
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "dlcp/communicator.hpp"

namespace dlcp::collectives {

// Before the algorithm: rotates, then adds the error left by the previous call, rounds to the
// wire dtype per packet of `block` values (as the transport will cut them), and keeps the new
// rounding error. Afterwards the values travel unchanged, so every contribution is exactly the
// rounded input.
void prepare_allreduce_input(std::span<float> values, const CollectiveOptions& options,
                             std::size_t block);

// After the algorithm: undoes the rotation.
void finish_allreduce_output(std::span<float> values, const CollectiveOptions& options);

// Throws Error(kInvalidArgument) when options ask `collective` (not an all-reduce) for a wire
// dtype, error feedback or rotation, which only all-reduce applies.
void require_float32_values(const CollectiveOptions& options, const std::string& collective);

}  // namespace dlcp::collectives
