// The sending side of one message, without I/O: which packets are protected, the order of each
// round, which packet goes next, and what a receiver's missing-ranges report starts. The socket
// engine and the simulator both drive it; they own the bytes, the pacing and the wire.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "policy/policy.hpp"
#include "protocol/parity_groups.hpp"
#include "wire/control.hpp"

namespace dlcp::protocol {

// One bit per packet, set for the protected ones, as FlowStart carries them.
std::vector<std::uint8_t> protected_bitmap(const std::vector<std::uint8_t>& protected_flags);

class MessageSender {
 public:
  // A message of `total_floats` (> 0) in packets of `stride_floats` (> 0). `ranking` gives the
  // protected set and the first round's order (policy::rank_packets); empty flags mean a reliable
  // message, every packet protected, sent in sequence order. `parity_members` > 0 adds a parity
  // packet per group of at least that many protected packets to the first round, after the
  // protected packets (parity_groups.hpp; none when fewer are protected); 0 adds none.
  MessageSender(std::uint32_t total_floats, std::uint16_t stride_floats,
                policy::PacketRanking ranking, std::uint8_t parity_members = 0);

  std::uint32_t total_floats() const { return total_floats_; }
  std::uint16_t stride() const { return stride_; }
  std::uint32_t packet_count() const { return packet_count_; }
  std::uint32_t protected_count() const { return protected_count_; }
  // A parity packet counts as protected: the receiver needs it to spare a round.
  bool is_protected(std::uint32_t seq) const { return is_parity(seq) || protected_[seq] != 0; }
  // Parity packets' seqs follow the message's: packet_count + the group.
  bool is_parity(std::uint32_t seq) const { return seq >= packet_count_; }
  // The parity groups; null without parity.
  const ParityGroups* parity() const { return parity_ ? &*parity_ : nullptr; }
  // Floats packet `seq` carries (a parity packet: as many as a full packet, in its payload's
  // length).
  std::uint32_t floats_in(std::uint32_t seq) const;
  // Round 0 is the first pass; each accepted report starts the next.
  std::uint16_t round() const { return round_; }

  // The FlowStart that announces the message (the receiver learns the protected set from it).
  wire::FlowStart flow_start(std::uint64_t message_id, std::uint8_t priority_class,
                             std::uint32_t budget_ppm) const;

  // Whether packets of the current round remain to be sent.
  bool has_next() const { return next_ < pending_.size(); }
  // The next packet of the round (has_next() must hold).
  std::uint32_t take_next() { return pending_[next_++]; }
  // A taken packet that did not leave (the kernel refused it): sent again later this round.
  void give_back(std::uint32_t seq) { pending_.push_back(seq); }
  // Packets of the current round, sent or not (RoundFinished::packets_sent once it is done).
  std::size_t round_size() const { return pending_.size(); }
  // Sent protected: a protected packet, and any retransmission (the receiver asked for it
  // because it needs it to settle, so it must not be dropped first now).
  bool sends_protected(std::uint32_t seq) const { return round_ > 0 || is_protected(seq); }

  enum class ReportEffect : std::uint8_t {
    kNewRound,  // the listed packets are the next round, protected first
    kIgnored,   // stale (another round's, or the round is still being sent) or empty
    kInvalid,   // a range beyond the message: a protocol error
  };
  // A receiver's missing-ranges report for `report_round`.
  ReportEffect on_missing_ranges(std::uint16_t report_round,
                                 const std::vector<wire::SeqRange>& ranges);

 private:
  std::uint32_t total_floats_;
  std::uint16_t stride_;
  std::uint32_t packet_count_;
  std::uint32_t protected_count_ = 0;
  std::vector<std::uint8_t> protected_;
  std::uint8_t parity_members_ = 0;
  std::optional<ParityGroups> parity_;
  std::vector<std::uint32_t> pending_;  // the current round's packets, in send order
  std::size_t next_ = 0;
  std::uint16_t round_ = 0;
};

}  // namespace dlcp::protocol
