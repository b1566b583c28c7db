// Which protected packets of a message one parity packet covers.
//
// With parity on (TransportOptions::parity_members = k > 0), a sender adds one parity packet per
// group of k or more protected packets to the first round, right after the protected packets; its
// payload is the XOR of the group's encoded payloads (each padded with zeros to a full packet).
// A receiver missing exactly one packet of a group rebuilds it from the parity and the others,
// without a recovery round. Where rounds are dear (long paths), that is the difference between
// a 100-packet protected set needing a round 63% of the time at 1% loss and, in 10 groups of 10
// packets plus parity (each losing two or more 0.5% of the time), about 5%.
//
// Groups interleave: the j-th protected packet (by sequence number) belongs to group j mod G,
// with G = floor(protected / k), so a burst of up to G consecutive losses hits each group at most
// once. Rounding down keeps the cost at most 1/k: a message with fewer than k protected packets
// has no group and no parity (a 2-packet message would otherwise pay 50% for it). Both ends derive
// the groups from FlowStart's protected bitmap and parity_members.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace dlcp::protocol {

class ParityGroups {
 public:
  // `protected_flags`: one flag per packet. `members` (k): the fewest protected packets per group,
  // > 0. No group (group_count() 0) when fewer than k packets are protected.
  ParityGroups(const std::vector<std::uint8_t>& protected_flags, std::uint32_t members);

  std::uint32_t group_count() const { return groups_; }
  // The group of protected packet `seq`, none for an unprotected one or one beyond the message.
  std::optional<std::uint32_t> group_of(std::uint32_t seq) const;
  // The group's packets, ascending.
  std::vector<std::uint32_t> members(std::uint32_t group) const;

 private:
  std::uint32_t groups_ = 0;
  std::vector<std::uint32_t> protected_seqs_;  // ascending
  std::vector<std::uint32_t> ordinal_;         // per packet: its index in protected_seqs_, or ~0
};

}  // namespace dlcp::protocol
