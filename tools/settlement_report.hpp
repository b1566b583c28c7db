// The transport's settlement counters in benchmark reports: how messages settled (every packet,
// within the budget, before the sender's first pass ended, at the deadline), how many recovery
// rounds they needed and how long their first round and recovery took. A rank reports what a
// phase added (its counters after the phase less those before), in JSON so that the launcher can
// add up ranks in other processes; the summary is what every bench prints.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dlcp/transport.hpp"

namespace dlcp::tools {

// What `after` holds beyond `before` (an earlier snapshot of the same transport).
nlohmann::json settlement_counters(const TransportCounters& before, const TransportCounters& after);

// The q-quantile of a rounds distribution ([r]: messages that needed r rounds, the last entry
// that many or more); 0 when empty. q in [0, 1].
std::uint32_t rounds_quantile(const std::array<std::uint64_t, 8>& by_rounds, double q);

// Adds up ranks' settlement_counters and summarises them: messages, settled_complete,
// settled_within_budget, settled_before_round_end, settled_by_group, receive_deadlines,
// datagrams_retransmitted, duplicates (resent packets that had arrived after all),
// packets_rebuilt (from parity), no_recovery_fraction
// (messages that needed no round / messages settled), rounds_p50/p99, first_round_p50/p99_ms,
// recovery_p50/p99_ms (over every settled message, 0 for those that needed no round) and
// recovery_mean_ms.
nlohmann::json summarize_settlement(const std::vector<nlohmann::json>& ranks);

// One line of a summary for a bench's progress output: "messages N: X% without a recovery
// round, rounds p50/p99 a/b, recovery p50/p99 c/d ms".
std::string describe_settlement(const nlohmann::json& summary);

}  // namespace dlcp::tools
