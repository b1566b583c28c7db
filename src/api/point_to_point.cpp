#include "api/point_to_point.hpp"

#include <algorithm>
#include <chrono>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "collectives/message_id.hpp"
#include "collectives/value_transform.hpp"
#include "common/time.hpp"
#include "dlcp/error.hpp"

namespace dlcp::api {
namespace {

using Key = std::pair<int, std::uint32_t>;  // (peer, tag's low 12 bits)
using Promise = std::shared_ptr<std::promise<CollectiveResult>>;

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

bool timed_out(const MessageOutcome& outcome) {
  if (outcome.ok()) return false;
  try {
    std::rethrow_exception(outcome.error);
  } catch (const Error& error) {
    return error.code() == ErrorCode::kDeadline;
  } catch (...) {
    return false;
  }
}

// A Work and the promise that completes it.
std::pair<Work, Promise> work_and_promise() {
  auto promise = std::make_shared<std::promise<CollectiveResult>>();
  Work work(promise->get_future().share());
  return {std::move(work), std::move(promise)};
}

Work completed(int source) {
  auto pair = work_and_promise();
  Work work = std::move(pair.first);
  Promise promise = std::move(pair.second);
  CollectiveResult result;
  result.source = source;
  promise->set_value(result);
  return work;
}

// Completes `promise` with the transfer's outcome.
MessageCallback fulfil(Promise promise, std::size_t entries, int peer) {
  return [promise = std::move(promise), entries, peer](MessageOutcome outcome) {
    if (!outcome.ok()) {
      promise->set_exception(outcome.error);
    } else {
      promise->set_value(result_of(*outcome.result, entries, peer));
    }
  };
}

// A receive posted ahead by a receive from any source, into a buffer of its own. Once it ends,
// its outcome waits here for whoever takes it, unless a receive from its peer took it first
// (`taker`).
struct Arrival {
  Key key;
  std::uint32_t sequence = 0;
  std::vector<float> buffer;
  std::optional<MessageOutcome> outcome;
  std::function<void(const Arrival&, MessageOutcome)> taker;
};

// Copies a transfer received ahead into the taker's `values`.
void take(const Arrival& arrival, MessageOutcome outcome, std::span<float> values,
          const Promise& promise, const char* what) {
  if (!outcome.ok()) {
    promise->set_exception(outcome.error);
    return;
  }
  if (arrival.buffer.size() != values.size()) {
    promise->set_exception(std::make_exception_ptr(
        Error(ErrorCode::kInvalidArgument, arrival.key.first,
              std::string(what) + " of " + std::to_string(values.size()) +
                  " floats took a transfer of " + std::to_string(arrival.buffer.size()) +
                  " from rank " + std::to_string(arrival.key.first) + " (received ahead)")));
    return;
  }
  std::copy(arrival.buffer.begin(), arrival.buffer.end(), values.begin());
  promise->set_value(result_of(*outcome.result, values.size(), arrival.key.first));
}

// A receive from any source, waiting for the first of its peers' transfers.
struct AnyReceive {
  std::span<float> values;
  Promise promise;
  MessageOptions message;
  TimePoint deadline;
};

}  // namespace

struct PointToPoint::Shared {
  // An entry of `ahead`: a receive posted ahead, not taken yet, or (arrival null, after it timed
  // out) only its place in the numbering.
  struct Ahead {
    std::uint32_t sequence = 0;
    std::shared_ptr<Arrival> arrival;
  };

  std::mutex mutex;
  std::map<Key, std::uint32_t> sends;     // next sequence per (peer, tag)
  std::map<Key, std::uint32_t> receives;  // the same for receives (those ahead included)
  std::map<Key, std::deque<Ahead>> ahead;
  std::map<std::uint32_t, std::deque<std::shared_ptr<AnyReceive>>> waiting;  // by tag, oldest first
};

namespace {

using Shared = PointToPoint::Shared;

void on_arrival(const std::shared_ptr<Shared>& shared, Transport* transport,
                const std::shared_ptr<Arrival>& arrival, MessageOutcome outcome);

// Posts the receive of (key)'s transfer `sequence` into a buffer of `floats`. Called holding
// shared->mutex (the transport never calls back from inside recv). `transport` is alive whenever
// a callback of its runs, and the callbacks are what call this apart from PointToPoint itself.
Shared::Ahead post_ahead(const std::shared_ptr<Shared>& shared, Transport* transport,
                         const Key& key, std::uint32_t sequence, std::size_t floats,
                         const MessageOptions& message) {
  auto arrival = std::make_shared<Arrival>();
  arrival->key = key;
  arrival->sequence = sequence;
  arrival->buffer.resize(floats);
  transport->recv(key.first, transfer_id(sequence, key.second), arrival->buffer, message, {},
                  [shared, transport, arrival](MessageOutcome done) {
                    on_arrival(shared, transport, arrival, std::move(done));
                  });
  return {sequence, std::move(arrival)};
}

// The options for posting a receive ahead again while receives from any source wait: until the
// latest of them gives up.
std::optional<MessageOptions> still_wanted(const std::deque<std::shared_ptr<AnyReceive>>& waiting,
                                           TimePoint now) {
  if (waiting.empty()) return std::nullopt;
  const auto latest =
      std::max_element(waiting.begin(), waiting.end(),
                       [](const auto& a, const auto& b) { return a->deadline < b->deadline; });
  MessageOptions message = (*latest)->message;
  message.deadline =
      std::max(std::chrono::milliseconds(1),
               std::chrono::ceil<std::chrono::milliseconds>((*latest)->deadline - now));
  return message;
}

// A receive posted ahead ended (on the transport's I/O thread).
void on_arrival(const std::shared_ptr<Shared>& shared, Transport* transport,
                const std::shared_ptr<Arrival>& arrival, MessageOutcome outcome) {
  std::vector<std::shared_ptr<AnyReceive>> failed;
  std::exception_ptr failure;
  std::shared_ptr<AnyReceive> taker;
  {
    std::unique_lock lock(shared->mutex);
    if (arrival->taker) {
      auto take_it = std::move(arrival->taker);
      lock.unlock();
      take_it(*arrival, std::move(outcome));
      return;
    }
    auto& queue = shared->ahead[arrival->key];
    if (queue.empty() || queue.front().arrival != arrival) return;  // dropped by an empty recv
    auto& waiting = shared->waiting[arrival->key.second];
    const TimePoint now = SteadyClock::now();
    try {
      if (timed_out(outcome)) {
        // Receives from any source whose deadline passed fail; the peer's place is kept, posted
        // again if others still wait.
        std::erase_if(waiting, [&](const auto& receive) {
          if (receive->deadline > now) return false;
          failed.push_back(receive);
          return true;
        });
        failure = std::make_exception_ptr(
            Error(ErrorCode::kDeadline, -1,
                  "recv from any source: no peer sent a transfer with this tag in time"));
        if (const auto message = still_wanted(waiting, now)) {
          queue.front() = post_ahead(shared, transport, arrival->key, arrival->sequence,
                                     arrival->buffer.size(), *message);
        } else {
          queue.front().arrival = nullptr;
        }
      } else if (waiting.empty()) {
        arrival->outcome = std::move(outcome);  // for the next receive from this peer or any
      } else {
        taker = waiting.front();
        waiting.pop_front();
        queue.pop_front();
        if (!outcome.ok()) {
          // The peer failed (or the transport shuts down): every receive from any source with
          // this tag fails with it, rather than wait on a transfer that may never be posted.
          failure = outcome.error;
          failed.assign(waiting.begin(), waiting.end());
          waiting.clear();
        } else if (const auto message = still_wanted(waiting, now)) {
          // The others still waiting need this peer's next transfer posted.
          queue.push_back(post_ahead(shared, transport, arrival->key,
                                     shared->receives[arrival->key]++,
                                     waiting.front()->values.size(), *message));
        }
      }
    } catch (...) {
      // Posting again failed (the transport refuses new transfers): nobody else may wait for it.
      failure = std::current_exception();
      for (auto& receive : waiting) failed.push_back(receive);
      waiting.clear();
    }
  }
  if (taker)
    take(*arrival, std::move(outcome), taker->values, taker->promise, "recv from any source");
  for (const auto& receive : failed) receive->promise->set_exception(failure);
}

}  // namespace

PointToPoint::PointToPoint(std::shared_ptr<Transport> transport, int rank, int workers)
    : transport_(std::move(transport)),
      rank_(rank),
      workers_(workers),
      shared_(std::make_shared<Shared>()) {}

Key PointToPoint::checked_key(int peer, std::uint32_t tag, const char* what,
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
  auto pair = work_and_promise();
  Work work = std::move(pair.first);
  Promise promise = std::move(pair.second);
  transport_->send(peer, transfer_id(sequence, key.second), values, message_options(options), {},
                   fulfil(std::move(promise), values.size(), peer));
  return work;
}

Work PointToPoint::recv(std::span<float> values, int peer, std::uint32_t tag,
                        const CollectiveOptions& options) {
  const Key key = checked_key(peer, tag, "recv", options);
  const MessageOptions message = message_options(options);
  auto pair = work_and_promise();
  Work work = std::move(pair.first);
  Promise promise = std::move(pair.second);
  std::optional<Shared::Ahead> ahead;
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
    if (!values.empty() && ahead && ahead->arrival && !ahead->arrival->outcome) {
      // Posted ahead by a receive from any source and still in flight: its end completes this
      // receive, or (timed out) posts it again into `values`.
      ahead->arrival->taker = [transport = transport_.get(), values, peer, key, sequence, message,
                               promise](const Arrival& arrival, MessageOutcome outcome) {
        if (!timed_out(outcome)) {
          take(arrival, std::move(outcome), values, promise, "recv");
          return;
        }
        try {
          transport->recv(peer, transfer_id(sequence, key.second), values, message, {},
                          fulfil(promise, values.size(), peer));
        } catch (...) {
          promise->set_exception(std::current_exception());
        }
      };
      return work;
    }
  }
  if (values.empty()) return completed(peer);
  if (ahead && ahead->arrival && !timed_out(*ahead->arrival->outcome)) {
    take(*ahead->arrival, std::move(*ahead->arrival->outcome), values, promise, "recv");
    return work;
  }
  // Nothing ahead, or it timed out: this receive posts the transfer into `values` itself.
  transport_->recv(peer, transfer_id(sequence, key.second), values, message, {},
                   fulfil(std::move(promise), values.size(), peer));
  return work;
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
  auto receive = std::make_shared<AnyReceive>();
  auto pair = work_and_promise();
  Work work = std::move(pair.first);
  Promise promise = std::move(pair.second);
  receive->values = values;
  receive->promise = std::move(promise);
  receive->message = message_options(options);
  receive->deadline = SteadyClock::now() + options.deadline;
  std::shared_ptr<Arrival> arrived;
  {
    std::lock_guard lock(shared_->mutex);
    // Each peer's oldest receive numbered ahead is a candidate, posted now if it is not; a peer
    // without one gets one. The first that already arrived is taken at once.
    std::vector<Key> keys;
    for (int peer = 0; peer < workers_; ++peer) {
      if (peer == rank_) continue;
      const Key key = checked_key(peer, tag, "recv", options);
      auto& queue = shared_->ahead[key];
      if (queue.empty()) {
        queue.push_back(post_ahead(shared_, transport_.get(), key, shared_->receives[key]++,
                                   values.size(), receive->message));
      } else if (!queue.front().arrival) {
        queue.front() = post_ahead(shared_, transport_.get(), key, queue.front().sequence,
                                   values.size(), receive->message);
      }
      keys.push_back(key);
    }
    for (const Key& key : keys) {
      auto& queue = shared_->ahead[key];
      if (queue.front().arrival->outcome) {
        arrived = queue.front().arrival;
        queue.pop_front();
        break;
      }
    }
    if (!arrived) shared_->waiting[tag & kTagMask].push_back(receive);
  }
  if (arrived) {
    take(*arrived, std::move(*arrived->outcome), values, receive->promise, "recv from any source");
  }
  return work;
}

}  // namespace dlcp::api
