// What an all-reduce or a reduce-scatter does to its values around the algorithm: the optional
// Hadamard rotation (CollectiveOptions::hadamard_rotation) and, for a 16-bit wire, the rounding of
// this rank's input, with error feedback (CollectiveOptions::error_feedback).
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

// Reduce-scatter's input: `copy` = `input` transformed as prepare_allreduce_input does, shard by
// shard (`shard` values each, with their own slice of the error feedback), every shard rotated
// and cut into packets from its own start: a shard travels to its owner on its own, and the owner
// unrotates its output (finish_allreduce_output) alone.
void prepare_reduce_scatter_input(std::span<const float> input, std::span<float> copy,
                                  std::size_t shard, const CollectiveOptions& options,
                                  std::size_t block);

// After the algorithm: undoes the rotation (of an all-reduce's values, or of a reduce-scatter's
// output shard).
void finish_allreduce_output(std::span<float> values, const CollectiveOptions& options);

// Throws Error(kInvalidArgument) when options ask `collective` (neither an all-reduce nor a
// reduce-scatter) for a wire dtype, error feedback or rotation, which only those two apply.
void require_float32_values(const CollectiveOptions& options, const std::string& collective);

}  // namespace dlcp::collectives
