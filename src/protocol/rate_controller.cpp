#include "protocol/rate_controller.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "common/invalid_option.hpp"

namespace dlcp {
namespace {

template <typename T>
[[noreturn]] void fail(const char* field, T value, const std::string& rule) {
  invalid_option(std::string("RateControlOptions.") + field, rule, value);
}

void check_rate(const char* field, double value) {
  if (!(value > 0.0) || !std::isfinite(value)) fail(field, value, "must be > 0 and finite");
}

}  // namespace

void RateControlOptions::validate() const {
  check_rate("initial_rate", initial_rate);
  check_rate("min_rate", min_rate);
  check_rate("max_rate", max_rate);
  if (min_rate > max_rate) {
    fail("min_rate", min_rate, "must be <= max_rate (" + option_value(max_rate) + ")");
  }
  if (initial_rate < min_rate) {
    fail("initial_rate", initial_rate, "must be >= min_rate (" + option_value(min_rate) + ")");
  }
  if (initial_rate > max_rate) {
    fail("initial_rate", initial_rate, "must be <= max_rate (" + option_value(max_rate) + ")");
  }
  if (!(increase >= 1.0) || !std::isfinite(increase)) {
    fail("increase", increase, "must be >= 1 and finite");
  }
  if (!(decrease > 0.0 && decrease <= 1.0)) fail("decrease", decrease, "must be in (0, 1]");
  if (!(keep_up > 0.0 && keep_up <= 1.0)) fail("keep_up", keep_up, "must be in (0, 1]");
  if (!(congestion_loss >= 0.0 && congestion_loss <= 1.0)) {
    fail("congestion_loss", congestion_loss, "must be in [0, 1]");
  }
  if (loss_sample_packets < 1) {
    fail("loss_sample_packets", loss_sample_packets, "must be >= 1");
  }
  if (hold_intervals < 0) fail("hold_intervals", hold_intervals, "must be >= 0");
  if (!(receive_rate >= 0.0) || !std::isfinite(receive_rate)) {
    fail("receive_rate", receive_rate, "must be >= 0 (0 = detect from the link) and finite");
  }
}

}  // namespace dlcp

namespace dlcp::protocol {
namespace {
constexpr double kMaxLossCut = 0.5;  // a loss report keeps at least this share of the rate
}  // namespace

RateController::RateController(const RateControlConfig& config)
    : config_(config), rate_(config.initial_rate) {
  config_.validate();
}

double RateController::on_feedback(const Feedback& feedback) {
  const std::uint64_t packets = feedback.received_packets + feedback.lost_packets;
  if (feedback.interval <= Duration::zero() || packets == 0) return rate_;

  ++reports_;
  const double delivered =
      static_cast<double>(feedback.received_bytes) / to_seconds(feedback.interval);
  sample_packets_ += packets;
  sample_lost_ += feedback.lost_packets;
  // The sample's loss so far, judged once the sample is complete; until then it only holds.
  const double sample_loss =
      static_cast<double>(sample_lost_) / static_cast<double>(sample_packets_);
  const bool congested_so_far = sample_loss > config_.congestion_loss;
  const bool judged = sample_packets_ >= static_cast<std::uint64_t>(config_.loss_sample_packets);
  if (judged) {
    last_loss_ = sample_loss;
    sample_packets_ = sample_lost_ = 0;
  }

  if (judged && congested_so_far) {
    ++congested_reports_;
    // Congestion loss: fall back to what got through, minus headroom, but by at most half (TCP's
    // cut on loss) per report. One interval can hold only a message's small tail, whose delivered
    // rate says nothing about the path; cutting to it could leave a sender at a tiny share of its
    // rate for many reports. Sustained loss still halves the rate every report. A congestion
    // report never raises the rate (delivered can exceed the rate while a queue drains), hence
    // the min.
    rate_ = std::min(
        rate_, std::max({config_.min_rate, config_.decrease * delivered, kMaxLossCut * rate_}));
    hold_ = config_.hold_intervals;
  } else if (feedback.ce_marked > 0) {
    // CE marks say a queue is building, not that it overflowed: cut in proportion to the marked
    // share, as DCTCP does per window, but never below what got through minus headroom. Cutting
    // to the delivered rate, as on loss, would punish a sender that had little to send in the
    // interval (a small layer, a message's tail): it delivers far below the rate it may use.
    const double marked = std::min(1.0, static_cast<double>(feedback.ce_marked) /
                                            static_cast<double>(feedback.received_packets));
    const double proportional = (1.0 - marked / 2.0) * rate_;
    rate_ =
        std::min(rate_, std::max({config_.min_rate, proportional, config_.decrease * delivered}));
    hold_ = config_.hold_intervals;
  } else if (hold_ > 0) {
    --hold_;  // holding after congestion: no increase
  } else if (congested_so_far) {
    // The open sample reads as congestion so far: too few packets to cut on, but no evidence to
    // raise the rate on either. Without this hold, a sender cut below its starting rate would
    // regain 1.25x per small lossy report until the sample completed.
  } else if (delivered >= config_.keep_up * rate_) {
    rate_ = std::min(config_.max_rate, rate_ * config_.increase);
  } else if (rate_ < config_.initial_rate) {
    // A clean report from a sender with too little to send to prove it keeps up: regain the rate
    // every new sender starts at.
    rate_ = std::min(config_.initial_rate, rate_ * config_.increase);
  }
  // Otherwise the receiver is not keeping up but sees no loss yet: hold.
  return rate_;
}

double offered_share(double receive_rate, std::size_t active_senders) {
  return receive_rate / static_cast<double>(std::max<std::size_t>(1, active_senders));
}

Duration sending_window(Duration feedback_interval, double receive_rate,
                        std::size_t counted_senders, std::uint64_t datagram_bytes) {
  constexpr int kGaps = 2;  // a paced sender may be a packet late (its NIC busy with others)
  constexpr int kMostIntervals = 64;
  if (feedback_interval <= Duration::zero()) return Duration::zero();
  const Duration longest = feedback_interval * kMostIntervals;
  if (!(receive_rate > 0.0) || !std::isfinite(receive_rate)) return feedback_interval;
  const double gap_ns = static_cast<double>(datagram_bytes) *
                        static_cast<double>(std::max<std::size_t>(1, counted_senders)) /
                        receive_rate * 1e9;
  const double window_ns = std::ceil(kGaps * gap_ns);
  if (window_ns >= static_cast<double>(longest.count())) return longest;
  return std::max(feedback_interval, Duration(static_cast<Duration::rep>(window_ns)));
}

bool counts_as_sender(Duration since_last_packet, bool mid_round, Duration feedback_interval,
                      Duration sending_window) {
  if (since_last_packet <= feedback_interval) return true;
  return mid_round && since_last_packet <= sending_window;
}

std::uint64_t offer_on_wire(double offered_rate) {
  constexpr double kMaxOffer = 1.8e19;  // below 2^64 (about 1.845e19)
  if (!(offered_rate > 0.0)) return 0;
  return static_cast<std::uint64_t>(std::min(kMaxOffer, offered_rate));
}

BandReports split_by_band(const Feedback& report, std::uint64_t shared_band_marks) {
  const std::uint64_t shared = std::min(shared_band_marks, report.ce_marked);
  BandReports reports{report, report};
  reports.peer.ce_marked = report.ce_marked - shared;
  reports.shared_band.ce_marked = shared;
  return reports;
}

double paced_rate(double controller_rate, double offered_rate, double min_rate) {
  if (!(offered_rate > 0.0)) return controller_rate;
  return std::max(min_rate, std::min(controller_rate, offered_rate));
}

}  // namespace dlcp::protocol
