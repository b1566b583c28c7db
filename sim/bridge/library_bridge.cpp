// Compiled as C++20 (the library's headers need it) and without any ns-3 header: forwards the
// simulator's calls to the library's own policy, protocol core and block-layout code.
#include <chrono>
#include <cstring>

#include <limits>
#include <variant>
#include "../src/library.hpp"
#include "collectives/block_layout.hpp"
#include "policy/policy.hpp"

#include "protocol/endpoint.hpp"
#include "switch/switch_plan.hpp"
#include "wire/control.hpp"
#include "wire/data_header.hpp"

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

FloatRange aligned_part(std::size_t total, std::size_t parts, std::size_t block,
                        std::size_t index) {
  const dlcp::collectives::Range part = dlcp::collectives::aligned_part(total, parts, block, index);
  return FloatRange{part.begin, part.size};
}

namespace {

static_assert(kDataHeaderBytes == dlcp::wire::kDataHeaderBytes);
static_assert(kParityFlag == dlcp::wire::data_flags::kParity);

dlcp::TimePoint at(std::int64_t now_ns) {
  return dlcp::TimePoint(std::chrono::nanoseconds(now_ns));
}

std::int64_t ns_of(dlcp::TimePoint time) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(time.time_since_epoch()).count();
}

dlcp::protocol::EndpointOptions endpoint_options(const dlcp::PolicyOptions& policy,
                                                 const HostEndpointOptions& o) {
  dlcp::protocol::EndpointOptions e;
  e.rank = o.rank;
  e.world_size = o.world_size;
  e.policy = policy;
  e.rate.initial_rate = o.line_rate_bytes;
  e.rate.max_rate = o.line_rate_bytes;
  e.rate.min_rate = o.line_rate_bytes / 1000.0;
  e.rate.receive_rate = o.line_rate_bytes;
  e.rate.shared_band_pacing = o.shared_band_pacing;
  e.feedback_interval = std::chrono::nanoseconds(o.feedback_interval_ns);
  e.quiet_before_report = std::chrono::nanoseconds(o.quiet_before_report_ns);
  e.burst_packets = o.burst_packets;
  e.max_run_packets = o.max_run_packets;
  e.datagram_overhead_bytes = o.datagram_overhead_bytes;
  e.shared_band_dscps = o.shared_band_dscps;
  e.receive_rate = o.line_rate_bytes;
  e.offer_receive_share = o.offer_receive_share;
  e.ecn_capable = o.ecn_capable;
  e.drop_precedence = o.drop_precedence;
  e.parity_members = o.parity_members;
  return e;
}

dlcp::MessageOptions message_options(const Request& request) {
  dlcp::MessageOptions options;
  options.layer = request.layer;
  options.num_layers = request.num_layers;
  options.loss_budget = request.loss_budget;
  options.deadline = std::chrono::milliseconds(request.deadline_ms);
  options.budget_group = request.budget_group;
  options.budget_group_size = request.budget_group_size;
  return options;
}

}  // namespace

struct HostEndpoint::State {
  State(const dlcp::PolicyOptions& policy, const HostEndpointOptions& options)
      : endpoint(endpoint_options(policy, options)),
        expectations{0, static_cast<std::uint16_t>(options.rank),
                     static_cast<std::uint32_t>(options.world_size), false} {}
  dlcp::protocol::Endpoint endpoint;
  dlcp::wire::DataExpectations expectations;
  dlcp::protocol::Burst burst;
  dlcp::protocol::EndpointOutputs outputs;
  std::vector<std::byte> frame;     // scratch of take_outputs
  std::vector<std::byte> datagram;  // a header, then zeros: never written beyond the header
  HostCounters counters;
};

HostEndpoint::HostEndpoint(const Policy& policy, const HostEndpointOptions& options)
    : state_(std::make_unique<State>(policy.options_->value, options)) {}
HostEndpoint::HostEndpoint(HostEndpoint&&) noexcept = default;
HostEndpoint::~HostEndpoint() = default;

void HostEndpoint::peer_joined(int peer, const PeerPath& path, std::int64_t now_ns) {
  dlcp::protocol::PeerLink link;
  link.address = "host " + std::to_string(peer);
  link.datagram_bytes = path.datagram_bytes;
  link.stride = path.stride;
  link.send_paths = path.send_paths;
  link.receive_paths = path.receive_paths;
  state_->endpoint.on_peer_joined(peer, link, at(now_ns));
}

void HostEndpoint::post_send(const Request& request, std::int64_t now_ns) {
  dlcp::protocol::SendRequest send;
  send.key = {request.peer, request.message_id};
  send.token = request.token;
  send.total_floats = request.total_floats;
  send.options = message_options(request);
  if (!request.protected_flags.empty()) send.protected_flags = request.protected_flags;
  state_->endpoint.post_send(std::move(send), at(now_ns));
}

void HostEndpoint::post_receive(const Request& request, std::int64_t now_ns) {
  dlcp::protocol::ReceiveRequest receive;
  receive.key = {request.peer, request.message_id};
  receive.token = request.token;
  receive.total_floats = request.total_floats;
  receive.options = message_options(request);
  state_->endpoint.post_receive(std::move(receive), at(now_ns));
}

bool HostEndpoint::next_burst(std::int64_t now_ns, std::vector<DataPacket>& packets) {
  packets.clear();
  dlcp::protocol::Burst& burst = state_->burst;
  if (!state_->endpoint.next_burst(at(now_ns), burst)) return false;
  for (const auto& run : burst.runs) {
    for (std::size_t k = run.first; k < run.first + run.count; ++k) {
      const dlcp::protocol::OutgoingPacket& packet = burst.packets[k];
      DataPacket out;
      out.peer = burst.peer;
      out.path = run.path;
      out.tos = packet.tos;
      dlcp::wire::encode_data_header(packet.header, std::as_writable_bytes(std::span(out.header)));
      out.payload_bytes = packet.header.payload_bytes;
      out.message_id = packet.header.message_id;
      out.seq = packet.header.seq;
      out.flags = packet.header.flags;
      out.retransmission = (packet.header.flags & dlcp::wire::data_flags::kRetransmission) != 0;
      packets.push_back(out);
    }
  }
  return true;
}

void HostEndpoint::burst_sent(std::int64_t now_ns) {
  dlcp::protocol::Burst& burst = state_->burst;
  burst.run_sent.assign(burst.runs.size(), 1);
  state_->endpoint.burst_sent(burst, at(now_ns));
}

bool HostEndpoint::on_datagram(const std::uint8_t* header, std::size_t payload_bytes,
                               std::uint8_t tos, std::size_t path, std::int64_t now_ns) {
  std::vector<std::byte>& datagram = state_->datagram;
  const std::size_t size = kDataHeaderBytes + payload_bytes;
  if (datagram.size() < size) datagram.resize(size);  // new bytes are zero
  std::memcpy(datagram.data(), header, kDataHeaderBytes);
  const std::span<const std::byte> bytes(datagram.data(), size);
  auto decoded = dlcp::wire::decode_data_packet(bytes, state_->expectations);
  if (!decoded) {
    ++state_->counters.rejected;
    return false;
  }
  state_->endpoint.on_datagram(*decoded, bytes, tos, path, at(now_ns));
  return true;
}

bool HostEndpoint::on_control(int peer, const std::uint8_t* bytes, std::size_t size,
                              std::int64_t now_ns) {
  const auto frame = std::as_bytes(std::span(bytes, size));
  if (size < dlcp::wire::kControlLengthPrefixBytes) {
    ++state_->counters.rejected;
    return false;
  }
  const auto length =
      dlcp::wire::decode_control_length(frame.first(dlcp::wire::kControlLengthPrefixBytes));
  if (!length || *length != size - dlcp::wire::kControlLengthPrefixBytes) {
    ++state_->counters.rejected;
    return false;
  }
  auto message =
      dlcp::wire::decode_control_body(frame.subspan(dlcp::wire::kControlLengthPrefixBytes));
  if (!message) {
    ++state_->counters.rejected;
    return false;
  }
  state_->endpoint.on_control(peer, *message, at(now_ns));
  return true;
}

void HostEndpoint::on_timeout(std::int64_t now_ns) {
  state_->endpoint.on_timeout(at(now_ns));
}

std::int64_t HostEndpoint::next_timeout_ns(std::int64_t now_ns) const {
  const dlcp::TimePoint next = state_->endpoint.next_timeout(at(now_ns));
  if (next == dlcp::TimePoint::max()) return std::numeric_limits<std::int64_t>::max();
  return ns_of(next);
}

std::int64_t HostEndpoint::next_send_ns(std::int64_t now_ns) {
  const auto next = state_->endpoint.next_send(at(now_ns));
  return next ? ns_of(*next) : -1;
}

bool HostEndpoint::has_outputs() const {
  return state_->endpoint.has_outputs();
}

void HostEndpoint::take_outputs(HostOutputs& out) {
  out.clear();
  dlcp::protocol::EndpointOutputs& outputs = state_->outputs;
  state_->endpoint.take_outputs(outputs);
  for (const auto& control : outputs.control) {
    if (std::holds_alternative<dlcp::wire::MissingRanges>(control.message)) {
      ++state_->counters.missing_reports;
    } else if (const auto* feedback = std::get_if<dlcp::wire::RateFeedback>(&control.message)) {
      state_->counters.shared_band_marks += feedback->ce_marked_shared_band;
    }
    state_->frame.clear();
    dlcp::wire::encode_control(control.message, state_->frame);
    ControlFrame frame;
    frame.peer = control.peer;
    frame.bytes.resize(state_->frame.size());
    std::memcpy(frame.bytes.data(), state_->frame.data(), state_->frame.size());
    out.control.push_back(std::move(frame));
  }
  for (const auto& done : outputs.completions) {
    Completion completion;
    completion.token = done.token;
    completion.is_send = done.is_send;
    completion.ok = !done.error.has_value();
    if (done.error) completion.error = done.error->what();
    completion.entries_missing = done.result.stats.entries_missing;
    state_->counters.packets_rebuilt += done.result.stats.packets_rebuilt;
    out.completions.push_back(std::move(completion));
  }
  for (const auto& lost : outputs.lost_peers) out.lost_peers.push_back(lost.peer);
  outputs.clear();
}

const HostCounters& HostEndpoint::counters() const {
  return state_->counters;
}

}  // namespace dlcp::sim::library
