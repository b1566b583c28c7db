// Transport's future-returning calls, over the callback ones.
#include <memory>

#include "dlcp/transport.hpp"

namespace dlcp {
namespace {

MessageCallback fulfil(std::shared_ptr<std::promise<MessageResult>> promise) {
  return [promise = std::move(promise)](MessageOutcome outcome) {
    if (outcome.error) {
      promise->set_exception(outcome.error);
    } else {
      promise->set_value(std::move(*outcome.result));
    }
  };
}

}  // namespace

std::future<MessageResult> Transport::send(int peer, std::uint64_t message_id,
                                           std::span<const float> values,
                                           const MessageOptions& options,
                                           std::span<const std::uint16_t> contributions) {
  auto promise = std::make_shared<std::promise<MessageResult>>();
  auto future = promise->get_future();
  send(peer, message_id, values, options, contributions, fulfil(std::move(promise)));
  return future;
}

std::future<MessageResult> Transport::recv(int peer, std::uint64_t message_id,
                                           std::span<float> values, const MessageOptions& options,
                                           std::span<std::uint16_t> contributions) {
  auto promise = std::make_shared<std::promise<MessageResult>>();
  auto future = promise->get_future();
  recv(peer, message_id, values, options, contributions, fulfil(std::move(promise)));
  return future;
}

}  // namespace dlcp
