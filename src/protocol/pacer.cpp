#include "protocol/pacer.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>

namespace dlcp::protocol {
namespace {

void check_rate(double rate_bytes_per_s) {
  if (!(rate_bytes_per_s > 0.0) || !std::isfinite(rate_bytes_per_s)) {
    std::ostringstream message;
    message << "Pacer: rate_bytes_per_s must be > 0 and finite (got " << rate_bytes_per_s << ")";
    throw std::invalid_argument(message.str());
  }
}

std::uint64_t check_burst(std::uint64_t burst_bytes) {
  if (burst_bytes == 0) throw std::invalid_argument("Pacer: burst_bytes must be > 0 (got 0)");
  return burst_bytes;
}

}  // namespace

Pacer::Pacer(double rate_bytes_per_s, std::uint64_t burst_bytes, TimePoint now)
    : rate_(rate_bytes_per_s),
      burst_(static_cast<double>(check_burst(burst_bytes))),
      tokens_(burst_),
      last_(now) {
  check_rate(rate_bytes_per_s);
}

void Pacer::set_rate(double rate_bytes_per_s, TimePoint now) {
  check_rate(rate_bytes_per_s);
  refill(now);  // tokens earned so far accrue at the old rate
  rate_ = rate_bytes_per_s;
}

void Pacer::set_burst(std::uint64_t burst_bytes, TimePoint now) {
  check_burst(burst_bytes);
  refill(now);
  burst_ = static_cast<double>(burst_bytes);
  tokens_ = std::min(tokens_, burst_);
}

void Pacer::drain(TimePoint now) {
  refill(now);
  tokens_ = std::min(tokens_, 0.0);
}

// Tokens accrue as tokens_ + rate_ * to_seconds(elapsed); wait_for() inverts exactly this
// expression, so available(now + wait_for(b, now)) >= b holds bit for bit.
void Pacer::refill(TimePoint now) {
  if (now <= last_) return;  // time never goes backwards: an earlier `now` is ignored
  tokens_ = std::min(burst_, tokens_ + rate_ * to_seconds(now - last_));
  last_ = now;
}

std::uint64_t Pacer::available(TimePoint now) {
  refill(now);
  if (tokens_ <= 0.0) return 0;
  return static_cast<std::uint64_t>(std::floor(tokens_));
}

void Pacer::consume(std::uint64_t bytes, TimePoint now) {
  refill(now);
  const double amount = static_cast<double>(bytes);
  // The debt is bounded by the packet just sent, so a caller that sends while the bucket is
  // short borrows at most one packet's worth of future tokens.
  tokens_ = std::max(tokens_ - amount, -amount);
}

Duration Pacer::wait_for(std::uint64_t bytes, TimePoint now) {
  refill(now);
  // The bucket never holds more than the burst: a request above it waits for a full bucket.
  const double target = std::min(static_cast<double>(bytes), burst_);
  if (tokens_ >= target) return Duration::zero();

  const auto reached = [&](Duration d) { return tokens_ + rate_ * to_seconds(d) >= target; };
  const double ns = std::ceil((target - tokens_) / rate_ * 1e9);
  if (ns >= 9.0e18) return Duration::max();
  Duration wait{static_cast<Duration::rep>(ns)};
  // Correct the floating-point estimate to the smallest whole nanosecond that reaches the target.
  for (Duration step{1}; !reached(wait); step *= 2) wait += step;
  while (wait > Duration::zero() && reached(wait - Duration{1})) wait -= Duration{1};
  // If `now` was earlier than the last refill, the tokens are counted from last_.
  if (last_ > now) wait += last_ - now;
  return wait;
}

std::uint64_t burst_for_rate(double rate_bytes_per_s, std::uint64_t datagram_bytes,
                             Duration feedback_interval) {
  check_rate(rate_bytes_per_s);
  if (feedback_interval <= Duration::zero()) {
    throw std::invalid_argument("burst_for_rate: feedback_interval must be positive");
  }
  const std::uint64_t floor = 2 * datagram_bytes;
  const std::uint64_t ceiling = std::max<std::uint64_t>(16 * datagram_bytes, 256 * 1024);
  // Nanoseconds over 8e9 rather than seconds over 8: a round rate and interval stay exact.
  const double window =
      std::ceil(rate_bytes_per_s * static_cast<double>(feedback_interval.count()) / 8e9);
  if (window >= static_cast<double>(ceiling)) return ceiling;
  return std::max(floor, static_cast<std::uint64_t>(window));
}

void apply_rate(Pacer& pacer, double rate_bytes_per_s, std::uint64_t datagram_bytes,
                Duration feedback_interval, TimePoint now) {
  const bool cut = rate_bytes_per_s < pacer.rate();
  pacer.set_rate(rate_bytes_per_s, now);
  pacer.set_burst(burst_for_rate(rate_bytes_per_s, datagram_bytes, feedback_interval), now);
  if (cut) pacer.drain(now);
}

}  // namespace dlcp::protocol
