// The endpoint's per-message and per-peer records (private to the endpoint's sources).
#pragma once

#include "protocol/endpoint.hpp"
#include "protocol/parity_groups.hpp"

namespace dlcp::protocol {

struct Endpoint::Outgoing {
  MessageKey key;
  std::uint64_t token = 0;
  std::span<const float> values;  // empty for a simulated payload
  std::uint32_t total_floats = 0;
  MessageOptions options;
  std::span<const std::uint16_t> contributions;
  int priority_class = 0;
  std::uint8_t protected_tos = 0;  // policy::data_tos of the class, per precedence
  std::uint8_t drop_eligible_tos = 0;
  // Paced by its peer's shared-band pacer as well (RateControlOptions::shared_band_pacing).
  bool shared_band = false;
  std::uint32_t budget_ppm = 0;
  std::optional<MessageSender> sender;
  std::uint64_t order = 0;  // its place in the send queue within its priority class
  TimePoint posted{};
  TimePoint deadline{};
  MessageStats stats;
  // Per parity group: its payload, made when the parity packet is first taken (empty until then
  // and for a simulated payload).
  std::vector<std::vector<std::byte>> parity_payloads;
};

struct Endpoint::Incoming {
  MessageKey key;
  std::uint64_t token = 0;
  std::span<float> values;  // empty for a simulated receive
  std::uint32_t total_floats = 0;
  MessageOptions options;
  std::span<std::uint16_t> contributions;
  std::optional<MessageReceiver> receiver;
  TimePoint posted{};
  TimePoint deadline{};
  MessageStats stats;
  // What this receive adds to its budget group's allowed entries (its own budget, once known).
  std::uint64_t group_allowed = 0;
  // Parity: the groups once FlowStart announced them, and each group's parity packet held until
  // it rebuilds a packet or its group is whole.
  struct HeldParity {
    std::vector<std::byte> payload;  // empty for a simulated receive
    WireDtype wire = WireDtype::kFloat32;
    std::uint16_t contributions = 1;
    std::uint8_t priority_class = 0;
  };
  std::optional<ParityGroups> parity;
  bool parity_refused = false;  // FlowStart announced none: parity packets are refused
  std::unordered_map<std::uint32_t, HeldParity> held_parity;
};

struct Endpoint::Peer {
  int rank = -1;
  bool connected = false;
  bool joined = false;        // joined once: a second join is refused
  std::string failure;        // non-empty once the peer is lost
  bool said_goodbye = false;  // shut down in order: its closing is not a job failure
  PeerLink link;
  std::optional<PeerPacing> pacing;
  std::optional<PathSelector> paths;
  std::vector<std::uint64_t> path_sent;  // since the last feedback from this peer
  std::uint16_t pair_seq = 0;            // next DataHeader::pair_seq to send (wraps)
  // Receive side: what this peer sent us since our last feedback to it.
  DeliveryMeter delivered;
};

}  // namespace dlcp::protocol
