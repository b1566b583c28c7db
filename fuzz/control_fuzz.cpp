// libFuzzer target for the control codec. The input is one frame body (everything after the
// length prefix); its first four bytes are also read as a length prefix. Every accepted body must
// re-encode to exactly the same bytes (the encoding is canonical) and decode to the same value.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <variant>
#include <vector>

#include "wire/byte_order.hpp"
#include "wire/control.hpp"

namespace {

using namespace dlcp::wire;

void check(bool ok) {
  if (!ok) std::abort();
}

bool same(const Hello& a, const Hello& b) {
  return a.job_token == b.job_token && a.rank == b.rank && a.world_size == b.world_size &&
         a.data_sockets == b.data_sockets && a.nonce == b.nonce && a.features == b.features;
}

bool same(const FlowStart& a, const FlowStart& b) {
  return a.message_id == b.message_id && a.total_floats == b.total_floats &&
         a.stride_floats == b.stride_floats && a.priority_class == b.priority_class &&
         a.loss_budget_ppm == b.loss_budget_ppm && a.packet_count == b.packet_count &&
         a.protected_count == b.protected_count && a.protected_bitmap == b.protected_bitmap;
}

bool same(const RoundFinished& a, const RoundFinished& b) {
  return a.message_id == b.message_id && a.round == b.round && a.packets_sent == b.packets_sent;
}

bool same(const MissingRanges& a, const MissingRanges& b) {
  return a.message_id == b.message_id && a.round == b.round && a.ranges == b.ranges;
}

bool same(const Stop& a, const Stop& b) {
  return a.message_id == b.message_id && a.reason == b.reason &&
         a.packets_received == b.packets_received && a.packets_missing == b.packets_missing;
}

bool same(const RateFeedback& a, const RateFeedback& b) {
  return a.interval_us == b.interval_us && a.received_bytes == b.received_bytes &&
         a.received_packets == b.received_packets &&
         a.lost_packets_estimate == b.lost_packets_estimate &&
         a.ce_marked_packets == b.ce_marked_packets && a.offered_rate == b.offered_rate &&
         a.path_received == b.path_received;
}

bool same(const Abort& a, const Abort& b) {
  return a.reason == b.reason;
}

bool same(const Goodbye& /*a*/, const Goodbye& /*b*/) {
  return true;
}

bool same(const Authenticate& a, const Authenticate& b) {
  return a.proof == b.proof;
}

bool same(const ControlMessage& a, const ControlMessage& b) {
  if (a.index() != b.index()) return false;
  return std::visit([&b](const auto& x) { return same(x, std::get<std::decay_t<decltype(x)>>(b)); },
                    a);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::byte> input(reinterpret_cast<const std::byte*>(data), size);

  if (size >= kControlLengthPrefixBytes) {
    const auto length = decode_control_length(input.first(kControlLengthPrefixBytes));
    if (length) {
      check(*length > 0 && *length <= kMaxControlFrameBytes);
    } else {
      check(length.error() == RejectReason::kBadControlLength);
    }
  }

  const auto decoded = decode_control_body(input);
  if (!decoded) {
    const RejectReason r = decoded.error();
    check(r == RejectReason::kBadVersion || r == RejectReason::kBadControlType ||
          r == RejectReason::kBadControlLength || r == RejectReason::kBadControlField);
    return 0;
  }

  std::vector<std::byte> frame;
  encode_control(*decoded, frame);
  check(frame.size() == kControlLengthPrefixBytes + size);
  const auto length = decode_control_length(frame);
  check(length.has_value() && *length == size);
  const auto body = std::span<const std::byte>(frame).subspan(kControlLengthPrefixBytes);
  for (std::size_t i = 0; i < size; ++i) check(body[i] == input[i]);

  const auto redecoded = decode_control_body(body);
  check(redecoded.has_value());
  check(same(*redecoded, *decoded));
  return 0;
}
