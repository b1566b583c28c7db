#include "collectives/transfers.hpp"

#include <string_view>

#include "collectives/group.hpp"

namespace dlcp::collectives {

std::shared_ptr<PeerFailures> PeerFailures::watch(Transport& transport) {
  auto failures = std::make_shared<PeerFailures>();
  // The listener keeps the fan-out alive for as long as the transport holds it.
  transport.on_failure([failures](const Error&) { failures->fail(); });
  return failures;
}

void PeerFailures::add(TransferState* state) {
  std::lock_guard lock(mutex_);
  live_.insert(state);
  if (failed_) {
    std::lock_guard state_lock(state->mutex);
    state->peer_failed = true;
  }
}

void PeerFailures::remove(TransferState* state) {
  std::lock_guard lock(mutex_);
  live_.erase(state);
}

void PeerFailures::fail() {
  std::lock_guard lock(mutex_);
  failed_ = true;
  for (TransferState* state : live_) {
    {
      std::lock_guard state_lock(state->mutex);
      state->peer_failed = true;
    }
    state->changed.notify_all();
  }
}

Transfers::Transfers(const Group& group)
    : transport_(group.transport), members_(group.members), failures_(group.failures) {
  failures_->add(state_.get());
}

int Transfers::transport_rank(int group_rank) const {
  return members_.empty() ? group_rank : members_[static_cast<std::size_t>(group_rank)];
}

Transfers::~Transfers() {
  failures_->remove(state_.get());
}

Transfers::Handle Transfers::add_slot() {
  std::lock_guard lock(state_->mutex);
  state_->outcomes.emplace_back();
  return state_->outcomes.size() - 1;
}

MessageCallback Transfers::completion(Handle transfer) const {
  return [state = state_, transfer](MessageOutcome outcome) {
    {
      std::lock_guard lock(state->mutex);
      state->outcomes[transfer] = std::move(outcome);
    }
    state->changed.notify_all();
  };
}

Transfers::Handle Transfers::send(int peer, std::uint64_t message_id, std::span<const float> values,
                                  const MessageOptions& options,
                                  std::span<const std::uint16_t> contributions) {
  const Handle transfer = add_slot();
  transport_.send(transport_rank(peer), message_id, values, options, contributions,
                  completion(transfer));
  return transfer;
}

Transfers::Handle Transfers::recv(int peer, std::uint64_t message_id, std::span<float> values,
                                  const MessageOptions& options,
                                  std::span<std::uint16_t> contributions) {
  const Handle transfer = add_slot();
  transport_.recv(transport_rank(peer), message_id, values, options, contributions,
                  completion(transfer));
  return transfer;
}

MessageResult Transfers::await(Handle transfer) {
  MessageOutcome outcome;
  {
    std::unique_lock lock(state_->mutex);
    auto& outcomes = state_->outcomes;
    // The transfer's own outcome counts first: a peer that finished and exited is a failure only
    // for transfers it left unfinished, and its last Stop is processed (ending this transfer)
    // before its closed connection is.
    state_->changed.wait(lock,
                         [&] { return outcomes.at(transfer).has_value() || state_->peer_failed; });
    if (!outcomes[transfer]) {
      lock.unlock();
      if (auto failure = transport_.failure()) throw *failure;  // set before the listener ran
      throw Error(ErrorCode::kPeerLost, -1, "a peer failed");
    }
    outcome = std::move(*outcomes[transfer]);
    outcomes[transfer].reset();
  }
  if (outcome.ok()) return std::move(*outcome.result);
  try {
    std::rethrow_exception(outcome.error);
  } catch (const Error& error) {
    // The transfer may have failed only in consequence of an earlier peer failure (a rank that
    // died first and made the next one give up): that one names the cause. A transfer's own
    // deadline is its own cause, even when a peer's abort was read in the same pass.
    const auto first = transport_.failure();
    if (error.code() != ErrorCode::kDeadline && first &&
        std::string_view(first->what()) != error.what()) {
      throw *first;
    }
    throw;
  }
}

}  // namespace dlcp::collectives
