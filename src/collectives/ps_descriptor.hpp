// What a worker tells a parameter server before each push: the shard's geometry, how to reduce
// it, and what the worker pushes (flat: its own values of the one stripe; hierarchical: its
// host's sum of the stripe it leads, or nothing). Travels as a small reliable transfer of 32-bit
// words (bit patterns carried in floats, which the transport copies verbatim).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>

#include "common/expected.hpp"
#include "dlcp/communicator.hpp"

namespace dlcp::collectives {

struct PsDescriptor {
  bool shutdown = false;
  std::uint32_t shard_floats = 0;
  std::uint32_t segment_floats = 0;
  std::uint32_t layer = 0;
  std::uint32_t num_layers = 1;
  std::uint32_t loss_budget_ppm = 0;
  std::uint32_t broadcast_budget_ppm = 0;
  ReduceOp op = ReduceOp::kSum;
  Aggregation aggregation = Aggregation::kUnbiased;
  std::uint32_t deadline_ms = 0;
  WireDtype wire = WireDtype::kFloat32;  // how pushes and pulls travel
  // Buffers are cut into `stripes` (hierarchical: one per leader of a host; flat: 1), each cut
  // into one shard per server. This worker pushes shard `shard_floats` of stripe `stripe`
  // (kNoStripe: nothing, with shard_floats 0), each value summing `contributions` workers.
  std::uint32_t stripes = 1;
  std::uint32_t stripe = 0;
  std::uint32_t contributions = 1;
  bool operator==(const PsDescriptor&) const = default;
};

inline constexpr std::uint32_t kNoStripe = 0xFFFFFFFF;
inline constexpr std::size_t kPsDescriptorWords = 15;
using PsDescriptorWire = std::array<float, kPsDescriptorWords>;

PsDescriptorWire encode_descriptor(const PsDescriptor& descriptor);
// Validates every field; the error names the field.
Expected<PsDescriptor, std::string> decode_descriptor(std::span<const float> words);

}  // namespace dlcp::collectives
