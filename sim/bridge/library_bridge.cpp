// Compiled as C++20 (the library's headers need it) and without any ns-3 header: forwards the
// simulator's calls to the library's own policy, rate-control, pacing and block-layout code.
#include <chrono>

#include "../src/library.hpp"
#include "collectives/block_layout.hpp"
#include "policy/policy.hpp"
#include "switch/switch_plan.hpp"
#include "transport/delivery_meter.hpp"
#include "transport/pacer.hpp"
#include "transport/rate_controller.hpp"

namespace dlcp::sim::library {

static_assert(kPriorityClasses == dlcp::kPriorityClasses);
static_assert(kPriorityClasses == dlcp::switchconf::kTrafficClasses);

struct Policy::Options {
  dlcp::PolicyOptions value;
};

Policy::Policy() : options_(std::make_unique<Options>()) {
  options_->value.validate();
}
Policy::Policy(const Policy& other) : options_(std::make_unique<Options>(*other.options_)) {}
Policy& Policy::operator=(const Policy& other) {
  *options_ = *other.options_;
  return *this;
}
Policy::~Policy() = default;

void Policy::set_protected_share(double share) {
  dlcp::PolicyOptions changed = options_->value;
  changed.protected_share = share;
  changed.validate();
  options_->value = changed;
}

double Policy::protected_share() const {
  return options_->value.protected_share;
}

std::uint8_t Policy::data_tos(int priority_class, bool is_protected) const {
  return dlcp::policy::data_tos(options_->value, priority_class,
                                is_protected ? dlcp::policy::Precedence::kProtected
                                             : dlcp::policy::Precedence::kDropEligible);
}

std::uint8_t Policy::control_tos() const {
  return dlcp::policy::control_tos(options_->value);
}

std::uint8_t Policy::control_dscp() const {
  return options_->value.dscp.control_dscp;
}

int Policy::class_of_dscp(std::uint8_t dscp) const {
  return dlcp::policy::class_of_dscp(options_->value.dscp, dscp);
}

std::vector<std::uint8_t> Policy::protected_packets(const float* values, std::size_t count,
                                                    std::size_t stride) const {
  return dlcp::policy::protected_packets(std::span<const float>(values, count), stride,
                                         options_->value.protected_share);
}

SwitchBands Policy::switch_bands(bool best_effort_alone) const {
  dlcp::switchconf::PortOptions port;
  port.best_effort_alone = best_effort_alone;
  const auto plan = dlcp::switchconf::make_switch_plan(options_->value.dscp, port);
  SwitchBands bands;
  const auto shares = dlcp::switchconf::shares_best_effort_class(plan);
  static_assert(std::tuple_size_v<decltype(shares)> == kDscpCount);
  for (std::size_t dscp = 0; dscp < shares.size(); ++dscp) {
    bands.shares_best_effort[dscp] = shares[dscp];
  }
  for (int dscp = 0; dscp < kDscpCount; ++dscp) {
    const auto& queue = dlcp::switchconf::queue_of_dscp(plan, static_cast<std::uint8_t>(dscp));
    bands.band[static_cast<std::size_t>(dscp)] = static_cast<std::int8_t>(queue.traffic_class);
    bands.drop_eligible[static_cast<std::size_t>(dscp)] = queue.drop_eligible;
  }
  return bands;
}

int priority_class(int layer, int num_layers) {
  return dlcp::policy::priority_class(layer, num_layers);
}

std::uint32_t budget_ppm(double fraction) {
  return dlcp::policy::budget_ppm(fraction);
}

bool is_ce_marked(std::uint8_t tos) {
  return dlcp::policy::is_ce_marked(tos);
}

double offered_share(double receive_rate, std::size_t active_senders) {
  return dlcp::transport::offered_share(receive_rate, active_senders);
}

double paced_rate(double controller_rate, double offered_rate, double min_rate) {
  return dlcp::transport::paced_rate(controller_rate, offered_rate, min_rate);
}

BandMarks split_marks(std::uint64_t ce_marked, std::uint64_t shared_band_marks) {
  dlcp::transport::Feedback report;
  report.ce_marked = ce_marked;
  const auto reports = dlcp::transport::split_by_band(report, shared_band_marks);
  return {reports.peer.ce_marked, reports.shared_band.ce_marked};
}

std::int64_t sending_window_ns(std::int64_t feedback_interval_ns, double receive_rate,
                               std::size_t counted_senders, std::uint64_t datagram_bytes) {
  return dlcp::transport::sending_window(dlcp::Duration(feedback_interval_ns), receive_rate,
                                         counted_senders, datagram_bytes)
      .count();
}

bool counts_as_sender(std::int64_t since_last_packet_ns, bool mid_round,
                      std::int64_t feedback_interval_ns, std::int64_t sending_window_ns) {
  return dlcp::transport::counts_as_sender(dlcp::Duration(since_last_packet_ns), mid_round,
                                           dlcp::Duration(feedback_interval_ns),
                                           dlcp::Duration(sending_window_ns));
}

std::uint64_t packets_lost(std::uint64_t numbered, std::uint64_t arrived) {
  return dlcp::transport::packets_lost(numbered, arrived);
}

FloatRange aligned_part(std::size_t total, std::size_t parts, std::size_t block,
                        std::size_t index) {
  const dlcp::collectives::Range part = dlcp::collectives::aligned_part(total, parts, block, index);
  return FloatRange{part.begin, part.size};
}

std::uint64_t allowed_missing_entries(std::uint64_t total_entries, std::uint32_t loss_budget_ppm) {
  return dlcp::policy::allowed_missing_entries(total_entries, loss_budget_ppm);
}

struct RateController::State {
  dlcp::transport::RateController controller;
};

namespace {
dlcp::RateControlOptions rates(double initial_rate, double min_rate, double max_rate) {
  dlcp::RateControlOptions options;
  options.initial_rate = initial_rate;
  options.min_rate = min_rate;
  options.max_rate = max_rate;
  return options;
}
}  // namespace

RateController::RateController(double initial_rate, double min_rate, double max_rate)
    : state_(std::make_unique<State>(
          State{dlcp::transport::RateController(rates(initial_rate, min_rate, max_rate))})) {}
RateController::RateController(RateController&&) noexcept = default;
RateController::~RateController() = default;

double RateController::on_feedback(std::int64_t interval_ns, std::uint64_t received_bytes,
                                   std::uint64_t received_packets, std::uint64_t lost_packets,
                                   std::uint64_t ce_marked) {
  dlcp::transport::Feedback feedback;
  feedback.interval = std::chrono::nanoseconds(interval_ns);
  feedback.received_bytes = received_bytes;
  feedback.received_packets = received_packets;
  feedback.lost_packets = lost_packets;
  feedback.ce_marked = ce_marked;
  return state_->controller.on_feedback(feedback);
}

double RateController::rate() const {
  return state_->controller.rate();
}

namespace {
dlcp::TimePoint at(std::int64_t now_ns) {
  return dlcp::TimePoint(std::chrono::nanoseconds(now_ns));
}
}  // namespace

struct Pacer::State {
  dlcp::transport::Pacer pacer;
  std::uint64_t datagram_bytes;
  dlcp::Duration feedback_interval;
};

Pacer::Pacer(double rate, std::uint64_t datagram_bytes, std::int64_t feedback_interval_ns,
             std::int64_t now_ns)
    : state_(std::make_unique<State>(State{
          dlcp::transport::Pacer(rate,
                                 dlcp::transport::burst_for_rate(
                                     rate, datagram_bytes, dlcp::Duration(feedback_interval_ns)),
                                 at(now_ns)),
          datagram_bytes, dlcp::Duration(feedback_interval_ns)})) {}
Pacer::Pacer(Pacer&&) noexcept = default;
Pacer::~Pacer() = default;

std::int64_t Pacer::wait_ns(std::int64_t now_ns) {
  return state_->pacer.wait_for(state_->datagram_bytes, at(now_ns)).count();
}

void Pacer::consume(std::uint64_t bytes, std::int64_t now_ns) {
  state_->pacer.consume(bytes, at(now_ns));
}

void Pacer::set_rate(double rate, std::int64_t now_ns) {
  dlcp::transport::apply_rate(state_->pacer, rate, state_->datagram_bytes,
                              state_->feedback_interval, at(now_ns));
}

std::uint64_t Pacer::burst() const {
  return state_->pacer.burst();
}

}  // namespace dlcp::sim::library
