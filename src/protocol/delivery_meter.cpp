#include "protocol/delivery_meter.hpp"

#include <algorithm>
#include <chrono>
#include <limits>

namespace dlcp::protocol {
namespace {

std::uint32_t saturate(std::uint64_t value) {
  return static_cast<std::uint32_t>(
      std::min<std::uint64_t>(value, std::numeric_limits<std::uint32_t>::max()));
}

}  // namespace

DeliveryMeter::DeliveryMeter(std::size_t paths) : path_packets_(paths, 0) {}

void DeliveryMeter::on_packet(std::size_t bytes, std::size_t path, std::uint16_t pair_seq,
                              TimePoint now) {
  // Serial arithmetic: a counter up to 2^15 - 1 ahead of the next expected one is new (the
  // packets between were lost or are late); one behind it is a late arrival, already numbered.
  const auto ahead = static_cast<std::int16_t>(
      static_cast<std::uint16_t>(pair_seq - static_cast<std::uint16_t>(numbered_)));
  if (ahead >= 0) numbered_ += static_cast<std::uint64_t>(ahead) + 1;
  if (packets_ == 0) first_ = now;
  last_ = now;
  ++packets_;
  bytes_ += bytes;
  if (path < path_packets_.size()) ++path_packets_[path];
}

bool DeliveryMeter::due(TimePoint now, Duration interval) const {
  return packets_ > 0 && now - first_ >= interval;
}

std::optional<TimePoint> DeliveryMeter::due_at(Duration interval) const {
  if (packets_ == 0) return std::nullopt;
  return first_ + interval;
}

wire::RateFeedback DeliveryMeter::take(TimePoint now) {
  const std::uint64_t numbered = numbered_ - numbered_at_report_;
  numbered_at_report_ = numbered_;
  const std::uint64_t lost_packets = packets_lost(numbered, packets_);
  wire::RateFeedback feedback;
  if (packets_ > 0) {
    const auto elapsed_us =
        std::chrono::duration_cast<std::chrono::microseconds>(now - first_).count();
    feedback.interval_us =
        saturate(static_cast<std::uint64_t>(std::max<std::int64_t>(0, elapsed_us)));
  }
  feedback.received_bytes = bytes_;
  feedback.received_packets = saturate(packets_);
  feedback.lost_packets_estimate = saturate(lost_packets);
  feedback.ce_marked_packets = saturate(ce_marked_);
  feedback.ce_marked_shared_band = saturate(ce_marked_shared_band_);
  feedback.path_received = path_packets_;
  bytes_ = packets_ = ce_marked_ = ce_marked_shared_band_ = 0;
  std::fill(path_packets_.begin(), path_packets_.end(), 0);
  return feedback;
}

}  // namespace dlcp::protocol
