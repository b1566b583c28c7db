#include "collectives/group.hpp"

#include <chrono>
#include <string_view>

#include "wire/values.hpp"

namespace dlcp::collectives {
namespace {

// How often a waiting collective checks for a failed peer; bounds how late it notices one.
constexpr std::chrono::milliseconds kFailurePoll{5};

}  // namespace

MessageResult Group::await(std::future<MessageResult>& transfer) const {
  while (transfer.wait_for(kFailurePoll) != std::future_status::ready) {
    auto failure = transport.failure();
    // A peer that finished and exited is a failure only for transfers it left unfinished: its
    // last Stop is processed before its closed connection, so look at the transfer once more.
    if (failure && transfer.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
      throw *failure;
    }
  }
  try {
    return transfer.get();
  } catch (const Error& error) {
    // The transfer may have failed only in consequence of an earlier peer failure (a rank that
    // died first and made the next one give up): that one names the cause. A transfer's own
    // deadline is its own cause, even when a peer's abort was read in the same pass.
    const auto first = transport.failure();
    if (error.code() != ErrorCode::kDeadline && first &&
        std::string_view(first->what()) != error.what()) {
      throw *first;
    }
    throw;
  }
}

std::size_t Group::block_for(WireDtype wire) const {
  return wire::packet_values(wire, block);
}

MessageOptions Group::message_options(const CollectiveOptions& options, double loss_budget,
                                      std::span<std::uint16_t> counts) const {
  MessageOptions message;
  message.layer = options.layer;
  message.num_layers = options.num_layers;
  message.loss_budget = loss_budget;
  message.deadline = options.deadline;
  message.packet_floats = static_cast<std::uint16_t>(block_for(options.wire));
  message.wire = options.wire;
  message.packet_contributions = counts;
  return message;
}

}  // namespace dlcp::collectives
