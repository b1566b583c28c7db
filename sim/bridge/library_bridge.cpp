// Compiled as C++20 (the library's headers need it) and without any ns-3 header: forwards the
// simulator's calls to the library's own policy, protocol core and block-layout code.
#include <chrono>

#include "../src/library.hpp"
#include "collectives/block_layout.hpp"
#include "policy/policy.hpp"
#include "protocol/delivery_meter.hpp"
#include "protocol/message_receiver.hpp"
#include "protocol/message_sender.hpp"
#include "protocol/peer_pacing.hpp"
#include "switch/switch_plan.hpp"

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
  return dlcp::protocol::offered_share(receive_rate, active_senders);
}

std::int64_t sending_window_ns(std::int64_t feedback_interval_ns, double receive_rate,
                               std::size_t counted_senders, std::uint64_t datagram_bytes) {
  return dlcp::protocol::sending_window(dlcp::Duration(feedback_interval_ns), receive_rate,
                                        counted_senders, datagram_bytes)
      .count();
}

bool counts_as_sender(std::int64_t since_last_packet_ns, bool mid_round,
                      std::int64_t feedback_interval_ns, std::int64_t sending_window_ns) {
  return dlcp::protocol::counts_as_sender(dlcp::Duration(since_last_packet_ns), mid_round,
                                          dlcp::Duration(feedback_interval_ns),
                                          dlcp::Duration(sending_window_ns));
}

std::uint64_t packets_lost(std::uint64_t numbered, std::uint64_t arrived) {
  return dlcp::protocol::packets_lost(numbered, arrived);
}

FloatRange aligned_part(std::size_t total, std::size_t parts, std::size_t block,
                        std::size_t index) {
  const dlcp::collectives::Range part = dlcp::collectives::aligned_part(total, parts, block, index);
  return FloatRange{part.begin, part.size};
}

std::uint64_t allowed_missing_entries(std::uint64_t total_entries, std::uint32_t loss_budget_ppm) {
  return dlcp::policy::allowed_missing_entries(total_entries, loss_budget_ppm);
}

namespace {
dlcp::TimePoint at(std::int64_t now_ns) {
  return dlcp::TimePoint(std::chrono::nanoseconds(now_ns));
}
}  // namespace

struct MessageSender::State {
  dlcp::protocol::MessageSender sender;
};

MessageSender::MessageSender(std::uint32_t total_floats, std::uint32_t stride_floats,
                             std::vector<std::uint8_t> protected_flags) {
  dlcp::policy::PacketRanking ranking;
  ranking.send_order = dlcp::policy::first_round_order(protected_flags);
  ranking.protected_flags = std::move(protected_flags);
  state_ = std::make_unique<State>(State{dlcp::protocol::MessageSender(
      total_floats, static_cast<std::uint16_t>(stride_floats), std::move(ranking))});
}
MessageSender::MessageSender(MessageSender&&) noexcept = default;
MessageSender::~MessageSender() = default;

bool MessageSender::has_next() const {
  return state_->sender.has_next();
}
std::uint32_t MessageSender::take_next() {
  return state_->sender.take_next();
}
bool MessageSender::sends_protected(std::uint32_t seq) const {
  return state_->sender.sends_protected(seq);
}
std::uint32_t MessageSender::round() const {
  return state_->sender.round();
}
std::uint32_t MessageSender::floats_in(std::uint32_t seq) const {
  return state_->sender.floats_in(seq);
}
bool MessageSender::on_missing_ranges(std::uint32_t round, const std::vector<SeqRange>& ranges) {
  std::vector<dlcp::wire::SeqRange> wire_ranges;
  wire_ranges.reserve(ranges.size());
  for (const auto& range : ranges) wire_ranges.push_back({range.first, range.count});
  return state_->sender.on_missing_ranges(static_cast<std::uint16_t>(round), wire_ranges) ==
         dlcp::protocol::MessageSender::ReportEffect::kNewRound;
}

struct MessageReceiver::State {
  dlcp::protocol::MessageReceiver receiver;
};

MessageReceiver::MessageReceiver(std::uint32_t total_floats, std::uint32_t stride_floats,
                                 std::uint32_t budget_ppm,
                                 const std::vector<std::uint8_t>& protected_flags,
                                 std::int64_t posted_ns)
    : state_(std::make_unique<State>(
          State{dlcp::protocol::MessageReceiver(total_floats, budget_ppm, at(posted_ns))})) {
  auto& receiver = state_->receiver;
  receiver.accept_shape(total_floats, static_cast<std::uint16_t>(stride_floats));
  receiver.on_flow(dlcp::protocol::protected_bitmap(protected_flags), budget_ppm, at(posted_ns));
}
MessageReceiver::MessageReceiver(MessageReceiver&&) noexcept = default;
MessageReceiver::~MessageReceiver() = default;

bool MessageReceiver::on_packet(std::uint32_t seq, std::int64_t now_ns) {
  if (state_->receiver.has_packet(seq)) return false;
  state_->receiver.on_packet(seq, at(now_ns));
  return true;
}
bool MessageReceiver::settles() const {
  return state_->receiver.settles_alone(false);
}
void MessageReceiver::on_round_finished(std::uint32_t round, std::int64_t now_ns) {
  state_->receiver.on_round_finished(static_cast<std::uint16_t>(round), at(now_ns));
}
std::int64_t MessageReceiver::report_due_ns(std::int64_t quiet_ns) const {
  const auto due = state_->receiver.report_due(dlcp::Duration(quiet_ns));
  return due ? due->time_since_epoch().count() : -1;
}
bool MessageReceiver::take_report(std::int64_t now_ns, std::int64_t quiet_ns, double path_loss,
                                  std::uint32_t& round, std::vector<SeqRange>& ranges) {
  const auto request =
      state_->receiver.take_report(at(now_ns), dlcp::Duration(quiet_ns), path_loss, 0);
  if (!request) return false;
  round = request->round;
  ranges.clear();
  for (const auto& range : request->ranges) ranges.push_back({range.first, range.count});
  return true;
}
bool MessageReceiver::mid_round() const {
  return state_->receiver.mid_round();
}
std::uint64_t MessageReceiver::missing_floats() const {
  return state_->receiver.tracker()->missing_floats();
}

struct PeerPacing::State {
  dlcp::protocol::PeerPacing pacing;
};

namespace {
dlcp::RateControlOptions rates(double initial_rate, double min_rate, double max_rate,
                               bool shared_band_pacing) {
  dlcp::RateControlOptions options;
  options.initial_rate = initial_rate;
  options.min_rate = min_rate;
  options.max_rate = max_rate;
  options.shared_band_pacing = shared_band_pacing;
  return options;
}
}  // namespace

PeerPacing::PeerPacing(double initial_rate, double min_rate, double max_rate,
                       bool shared_band_pacing, std::uint64_t datagram_bytes,
                       std::int64_t feedback_interval_ns, std::int64_t now_ns)
    : state_(std::make_unique<State>(State{dlcp::protocol::PeerPacing(
          rates(initial_rate, min_rate, max_rate, shared_band_pacing), datagram_bytes,
          dlcp::Duration(feedback_interval_ns), at(now_ns))})) {}
PeerPacing::PeerPacing(PeerPacing&&) noexcept = default;
PeerPacing::~PeerPacing() = default;

std::int64_t PeerPacing::wait_ns(bool shared_band, std::int64_t now_ns) {
  return state_->pacing.wait(shared_band, at(now_ns)).count();
}
void PeerPacing::consume(std::uint64_t bytes, bool shared_band, std::int64_t now_ns) {
  state_->pacing.consume(bytes, shared_band, at(now_ns));
}
void PeerPacing::on_report(std::int64_t interval_ns, std::uint64_t received_bytes,
                           std::uint64_t received_packets, std::uint64_t lost_packets,
                           std::uint64_t ce_marked, std::uint64_t shared_band_marks,
                           double offered_rate, std::int64_t now_ns) {
  dlcp::protocol::RateReport report;
  report.feedback.interval = std::chrono::nanoseconds(interval_ns);
  report.feedback.received_bytes = received_bytes;
  report.feedback.received_packets = received_packets;
  report.feedback.lost_packets = lost_packets;
  report.feedback.ce_marked = ce_marked;
  report.shared_band_marks = shared_band_marks;
  report.offered_rate = offered_rate;
  state_->pacing.on_report(report, at(now_ns));
}
double PeerPacing::last_loss() const {
  return state_->pacing.last_loss();
}
}  // namespace dlcp::sim::library
