#include "collectives/group.hpp"

#include "collectives/reduction.hpp"
#include "wire/values.hpp"

namespace dlcp::collectives {

std::size_t Group::block_for(WireDtype wire) const {
  return wire::packet_values(wire, block);
}

float Group::fallback_scale(ReduceOp op) const {
  return collectives::fallback_scale(op, reduced_world(), input_contributions);
}

MessageOptions Group::message_options(const CollectiveOptions& options, double loss_budget) const {
  MessageOptions message;
  message.layer = options.layer;
  message.num_layers = options.num_layers;
  message.loss_budget = loss_budget;
  message.deadline = options.deadline;
  message.packet_floats = static_cast<std::uint16_t>(block_for(options.wire));
  message.wire = options.wire;
  return message;
}

}  // namespace dlcp::collectives
