#include "api/point_to_point.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "collectives/message_id.hpp"
#include "collectives/value_transform.hpp"
#include "dlcp/error.hpp"

namespace dlcp::api {
namespace {

constexpr std::uint32_t kTagMask = collectives::kMaxSteps - 1;

std::uint64_t transfer_id(std::uint32_t sequence, std::uint32_t tag) {
  return collectives::message_id(sequence, collectives::Phase::kPointToPoint, tag, 0);
}

MessageOptions message_options(const CollectiveOptions& options) {
  MessageOptions message;
  message.layer = options.layer;
  message.num_layers = options.num_layers;
  message.deadline = options.deadline;
  return message;
}

CollectiveResult result_of(const MessageResult& message, std::size_t entries, int source) {
  CollectiveResult result;
  result.entries = entries;
  result.seconds = message.stats.seconds;
  result.source = source;
  return result;
}

// A transfer's future as a Work: a thread waits for it, so that Work::ready() and wait() behave
// as for collectives.
template <class Wait>
Work waited(Wait wait) {
  return Work(std::async(std::launch::async, std::move(wait)).share());
}

Work completed(int source) {
  std::promise<CollectiveResult> done;
  CollectiveResult result;
  result.source = source;
  done.set_value(result);
  return Work(done.get_future().share());
}

}  // namespace

PointToPoint::PointToPoint(std::shared_ptr<Transport> transport, int rank, int workers)
    : transport_(std::move(transport)), rank_(rank), workers_(workers) {}

PointToPoint::Key PointToPoint::checked_key(int peer, std::uint32_t tag, const char* what,
                                            const CollectiveOptions& options) const {
  options.validate();
  collectives::require_float32_values(options, what);
  if (peer < 0 || peer >= workers_ || peer == rank_) {
    throw Error(ErrorCode::kInvalidArgument, peer,
                std::string(what) + " with rank " + std::to_string(peer) +
                    ": not another worker of " + std::to_string(workers_));
  }
  if (options.loss_budget > 0 || options.broadcast_loss_budget > 0) {
    throw Error(ErrorCode::kInvalidArgument, peer,
                std::string(what) + " is loss-free: its options must not set a loss budget");
  }
  return {peer, tag & kTagMask};
}

Work PointToPoint::send(std::span<const float> values, int peer, std::uint32_t tag,
                        const CollectiveOptions& options) {
  const Key key = checked_key(peer, tag, "send", options);
  std::uint32_t sequence = 0;
  {
    std::lock_guard lock(shared_->mutex);
    sequence = shared_->sends[key]++;
  }
  if (values.empty()) return completed(rank_);  // the receiver's is empty too: nothing to move
  auto transfer =
      transport_->send(peer, transfer_id(sequence, key.second), values, message_options(options));
  return waited([transfer = std::move(transfer), entries = values.size(), peer]() mutable {
    return result_of(transfer.get(), entries, peer);
  });
}

PointToPoint::Ahead PointToPoint::post_ahead(const Key& key, std::uint32_t sequence,
                                             std::size_t floats, const CollectiveOptions& options) {
  Ahead ahead;
  ahead.sequence = sequence;
  ahead.buffer = std::make_shared<std::vector<float>>(floats);
  ahead.transfer = transport_
                       ->recv(key.first, transfer_id(sequence, key.second), *ahead.buffer,
                              message_options(options))
                       .share();
  return ahead;
}

Work PointToPoint::recv(std::span<float> values, int peer, std::uint32_t tag,
                        const CollectiveOptions& options) {
  const Key key = checked_key(peer, tag, "recv", options);
  std::optional<Ahead> ahead;
  std::uint32_t sequence = 0;
  {
    std::lock_guard lock(shared_->mutex);
    auto& queue = shared_->ahead[key];
    if (!queue.empty()) {
      ahead = std::move(queue.front());
      queue.pop_front();
      sequence = ahead->sequence;
    } else {
      sequence = shared_->receives[key]++;
    }
  }
  if (values.empty()) return completed(peer);
  if (!ahead || !ahead->transfer) {
    auto transfer =
        transport_->recv(peer, transfer_id(sequence, key.second), values, message_options(options));
    return waited([transfer = std::move(transfer), entries = values.size(), peer]() mutable {
      return result_of(transfer.get(), entries, peer);
    });
  }
  // Posted ahead by a receive from any source: its buffer holds the transfer, unless it timed
  // out first, when this receive posts it again.
  return waited([transport = transport_, ahead = std::move(*ahead), values, peer, key,
                 options = message_options(options)] {
    MessageResult message;
    try {
      message = ahead.transfer->get();
    } catch (const Error& error) {
      if (error.code() != ErrorCode::kDeadline) throw;
      return result_of(
          transport->recv(peer, transfer_id(ahead.sequence, key.second), values, options).get(),
          values.size(), peer);
    }
    if (ahead.buffer->size() != values.size()) {
      throw Error(ErrorCode::kInvalidArgument, peer,
                  "recv of " + std::to_string(values.size()) + " floats from rank " +
                      std::to_string(peer) + ", whose transfer (received ahead) holds " +
                      std::to_string(ahead.buffer->size()));
    }
    std::copy(ahead.buffer->begin(), ahead.buffer->end(), values.begin());
    return result_of(message, values.size(), peer);
  });
}

Work PointToPoint::recv_any(std::span<float> values, std::uint32_t tag,
                            const CollectiveOptions& options) {
  options.validate();
  collectives::require_float32_values(options, "recv from any source");
  if (values.empty()) {
    throw Error(ErrorCode::kInvalidArgument, -1,
                "recv from any source of an empty buffer: no transfer would name its sender");
  }
  if (workers_ < 2) {
    throw Error(ErrorCode::kInvalidArgument, -1, "recv from any source in a world of one");
  }
  // Each peer's oldest receive numbered ahead is a candidate, posted now if it is not; a peer
  // without one gets one.
  std::vector<Key> keys;
  {
    std::lock_guard lock(shared_->mutex);
    for (int peer = 0; peer < workers_; ++peer) {
      if (peer == rank_) continue;
      const Key key = checked_key(peer, tag, "recv", options);
      auto& queue = shared_->ahead[key];
      if (queue.empty()) {
        queue.push_back(post_ahead(key, shared_->receives[key]++, values.size(), options));
      } else if (!queue.front().transfer) {
        queue.front() = post_ahead(key, queue.front().sequence, values.size(), options);
      }
      keys.push_back(key);
    }
  }
  const auto deadline = std::chrono::steady_clock::now() + options.deadline;
  return waited([shared = shared_, keys, values, deadline]() -> CollectiveResult {
    for (;;) {
      for (const Key& key : keys) {
        std::optional<Ahead> taken;
        {
          std::lock_guard lock(shared->mutex);
          auto& queue = shared->ahead[key];
          // Another receive may have taken this peer's candidate meanwhile.
          if (queue.empty() || !queue.front().transfer) continue;
          if (queue.front().transfer->wait_for(std::chrono::seconds(0)) !=
              std::future_status::ready) {
            continue;
          }
          taken = std::move(queue.front());
          queue.pop_front();
        }
        MessageResult message;
        try {
          message = taken->transfer->get();
        } catch (const Error& error) {
          if (error.code() != ErrorCode::kDeadline) throw;
          // That peer sent nothing with this tag in time: its place in the numbering stays, for
          // the next receive from it, and the others are still awaited.
          std::lock_guard lock(shared->mutex);
          shared->ahead[key].push_front(Ahead{taken->sequence, nullptr, std::nullopt});
          continue;
        }
        if (taken->buffer->size() != values.size()) {
          throw Error(ErrorCode::kInvalidArgument, key.first,
                      "recv from any source of " + std::to_string(values.size()) +
                          " floats took a transfer of " + std::to_string(taken->buffer->size()));
        }
        std::copy(taken->buffer->begin(), taken->buffer->end(), values.begin());
        return result_of(message, values.size(), key.first);
      }
      if (std::chrono::steady_clock::now() > deadline) {
        throw Error(ErrorCode::kDeadline, -1,
                    "recv from any source: no peer sent a transfer with this tag in time");
      }
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  });
}

}  // namespace dlcp::api
