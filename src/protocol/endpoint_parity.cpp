// The endpoint's parity (parity_groups.hpp): the sender's parity payloads, and the receiver's
// held parity packets and the lost packets it rebuilds from them. A rebuilt packet is recorded
// as an arrival; settling is left to the caller, which still holds the message.
#include <algorithm>

#include "protocol/endpoint.hpp"
#include "protocol/endpoint_state.hpp"
#include "wire/parity_payload.hpp"
#include "wire/values.hpp"

namespace dlcp::protocol {

std::span<const std::byte> Endpoint::parity_payload(Outgoing& message, std::uint32_t group) {
  if (message.values.empty()) return {};  // a simulated payload: only its size travels
  const MessageSender& sender = *message.sender;
  if (message.parity_payloads.empty())
    message.parity_payloads.resize(sender.parity()->group_count());
  std::vector<std::byte>& payload = message.parity_payloads[group];
  if (!payload.empty()) return payload;  // a parity packet the kernel refused, sent again
  const WireDtype dtype = message.options.wire;
  payload.assign(wire::payload_bytes(dtype, sender.stride()), std::byte{0});
  for (const std::uint32_t seq : sender.parity()->members(group)) {
    const std::span<const float> values =
        message.values.subspan(std::uint64_t{seq} * sender.stride(), sender.floats_in(seq));
    wire::xor_encoded(values, dtype, payload, parity_scratch_);
  }
  return payload;
}

void Endpoint::apply_parity(Incoming& message, const wire::FlowStart& flow) {
  message.parity.reset();
  // The sender adds parity only when it makes a group (k protected packets or more).
  message.parity_refused = flow.parity_members == 0 || flow.protected_count < flow.parity_members;
  if (message.parity_refused) {
    message.held_parity.clear();
    return;
  }
  // The tracker has read the FlowStart's bitmap (MessageReceiver::on_flow, called first).
  message.parity.emplace(message.receiver->tracker()->protected_flags(), flow.parity_members);
  // Parity packets held before the FlowStart for groups that do not exist were forged.
  std::erase_if(message.held_parity,
                [&](const auto& entry) { return entry.first >= message.parity->group_count(); });
}

void Endpoint::on_parity(Incoming& message, const wire::DataHeader& header,
                         std::span<const std::byte> payload, TimePoint now) {
  if (!accept_shape(message, header.total_floats, header.stride_floats) || message.parity_refused) {
    rejects_.add(wire::RejectReason::kMismatchedMessage);
    return;
  }
  const std::uint32_t group = header.seq - header.packet_count();
  if (message.parity && group >= message.parity->group_count()) {
    rejects_.add(wire::RejectReason::kBadGeometry);
    return;
  }
  if (message.held_parity.contains(group)) {
    rejects_.add(wire::RejectReason::kDuplicate);
    return;
  }
  ++counters_.parity_received;
  message.receiver->on_parity(now);
  Incoming::HeldParity& held = message.held_parity[group];
  if (!message.values.empty()) held.payload.assign(payload.begin(), payload.end());
  held.wire = header.wire;
  held.contributions = header.contributions;
  held.priority_class = header.priority_class;
  if (message.parity) rebuild(message, group, now);
  maybe_settle(message, now);
}

void Endpoint::rebuild(Incoming& message, std::uint32_t group, TimePoint now) {
  const auto it = message.held_parity.find(group);
  if (it == message.held_parity.end()) return;
  const std::vector<std::uint32_t> members = message.parity->members(group);
  std::optional<std::uint32_t> lost;
  for (const std::uint32_t seq : members) {
    if (message.receiver->has_packet(seq)) continue;
    if (lost) return;  // two or more lost: the parity waits for another to arrive
    lost = seq;
  }
  if (lost) {
    const Incoming::HeldParity& held = it->second;
    const ReceiveTracker& tracker = *message.receiver->tracker();
    const std::uint64_t stride = tracker.floats_in(0);
    if (!message.values.empty()) {
      // The lost payload is the parity XOR the others' payloads, encoded again from where they
      // were placed (decoding then encoding gives back the same bytes, wire/values.hpp).
      parity_scratch_.assign(held.payload.begin(), held.payload.end());
      std::vector<std::byte> encoded;
      for (const std::uint32_t seq : members) {
        if (seq == *lost) continue;
        wire::xor_encoded(message.values.subspan(seq * stride, tracker.floats_in(seq)), held.wire,
                          parity_scratch_, encoded);
      }
      const std::uint32_t floats = tracker.floats_in(*lost);
      wire::decode_values(
          std::span<const std::byte>(parity_scratch_).first(wire::payload_bytes(held.wire, floats)),
          held.wire, message.values.subspan(*lost * stride, floats));
    }
    record_packet(message, *lost, held.contributions, held.priority_class, now);
    ++message.stats.packets_rebuilt;
    ++counters_.packets_rebuilt;
  }
  // Whole now: the parity has done its job.
  message.held_parity.erase(it);
}

}  // namespace dlcp::protocol
