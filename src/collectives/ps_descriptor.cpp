#include "collectives/ps_descriptor.hpp"

#include <bit>

#include "collectives/message_id.hpp"
#include "policy/policy.hpp"

namespace dlcp::collectives {
namespace {

constexpr std::uint32_t kMagic = 0x444C5053;  // "DLPS"; the word count is the version
constexpr std::uint32_t kKindAllreduce = 1;
constexpr std::uint32_t kKindShutdown = 2;

}  // namespace

PsDescriptorWire encode_descriptor(const PsDescriptor& d) {
  const std::array<std::uint32_t, kPsDescriptorWords> words{
      kMagic,
      d.shutdown ? kKindShutdown : kKindAllreduce,
      d.shard_floats,
      d.segment_floats,
      d.layer,
      d.num_layers,
      d.loss_budget_ppm,
      d.broadcast_budget_ppm,
      static_cast<std::uint32_t>(d.op),
      static_cast<std::uint32_t>(d.aggregation),
      d.deadline_ms,
      static_cast<std::uint32_t>(d.wire),
      d.stripes,
      d.stripe,
      d.contributions};
  PsDescriptorWire wire{};
  for (std::size_t i = 0; i < words.size(); ++i) wire[i] = std::bit_cast<float>(words[i]);
  return wire;
}

Expected<PsDescriptor, std::string> decode_descriptor(std::span<const float> floats) {
  if (floats.size() != kPsDescriptorWords) return unexpected(std::string("descriptor size"));
  std::array<std::uint32_t, kPsDescriptorWords> w{};
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = std::bit_cast<std::uint32_t>(floats[i]);
  if (w[0] != kMagic) return unexpected(std::string("descriptor magic/version"));
  PsDescriptor d;
  if (w[1] != kKindAllreduce && w[1] != kKindShutdown) {
    return unexpected(std::string("descriptor kind"));
  }
  d.shutdown = w[1] == kKindShutdown;
  d.shard_floats = w[2];
  d.segment_floats = w[3];
  d.layer = w[4];
  d.num_layers = w[5];
  d.loss_budget_ppm = w[6];
  d.broadcast_budget_ppm = w[7];
  d.deadline_ms = w[10];
  d.stripes = w[12];
  d.stripe = w[13];
  d.contributions = w[14];
  if (d.shutdown) return d;
  if (d.shard_floats > 0 && d.segment_floats == 0) return unexpected(std::string("segment size"));
  if (d.num_layers == 0 || d.layer >= d.num_layers) return unexpected(std::string("layer"));
  if (d.loss_budget_ppm > policy::kPpm || d.broadcast_budget_ppm > policy::kPpm) {
    return unexpected(std::string("loss budget"));
  }
  if (w[8] > static_cast<std::uint32_t>(ReduceOp::kAverage)) return unexpected(std::string("op"));
  if (w[9] > static_cast<std::uint32_t>(Aggregation::kZeroFill)) {
    return unexpected(std::string("aggregation"));
  }
  if (d.deadline_ms == 0) return unexpected(std::string("deadline"));
  if (w[11] > static_cast<std::uint32_t>(WireDtype::kFloat16)) {
    return unexpected(std::string("wire dtype"));
  }
  // Stripes are numbered in a message id's step field (budget groups on the server).
  if (d.stripes == 0 || d.stripes > kMaxSteps) return unexpected(std::string("stripes"));
  if (d.stripe == kNoStripe) {
    if (d.shard_floats != 0 || d.contributions != 0) return unexpected(std::string("no stripe"));
  } else if (d.stripe >= d.stripes) {
    return unexpected(std::string("stripe"));
  } else if (d.contributions == 0 || d.contributions > 0xFFFF) {
    return unexpected(std::string("contributions"));
  }
  d.wire = static_cast<WireDtype>(w[11]);
  d.op = static_cast<ReduceOp>(w[8]);
  d.aggregation = static_cast<Aggregation>(w[9]);
  return d;
}

}  // namespace dlcp::collectives
