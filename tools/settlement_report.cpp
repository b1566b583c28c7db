#include "settlement_report.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>
#include <stdexcept>
#include <string>

#include "wire/reject_reason.hpp"

namespace dlcp::tools {
namespace {

nlohmann::json histogram_json(const DurationHistogram& histogram) {
  return {{"buckets", histogram.nonzero_buckets()}, {"sum_seconds", histogram.sum_seconds()}};
}

DurationHistogram histogram_from(const nlohmann::json& json) {
  return DurationHistogram::from_buckets(
      json.at("buckets").get<std::vector<std::pair<std::size_t, std::uint64_t>>>(),
      json.at("sum_seconds").get<double>());
}

std::uint64_t reject_count(const TransportCounters& counters, wire::RejectReason reason) {
  for (const auto& [name, count] : counters.rejected_by_reason) {
    if (name == wire::to_string(reason)) return count;
  }
  return 0;
}

}  // namespace

nlohmann::json settlement_counters(const TransportCounters& before,
                                   const TransportCounters& after) {
  nlohmann::json out;
  out["settled_complete"] = after.settled_complete - before.settled_complete;
  out["settled_within_budget"] = after.settled_within_budget - before.settled_within_budget;
  out["settled_before_round_end"] =
      after.settled_before_round_end - before.settled_before_round_end;
  out["settled_by_group"] = after.settled_by_group - before.settled_by_group;
  out["receive_deadlines"] = after.receive_deadlines - before.receive_deadlines;
  // Resent packets, those that arrived twice (a round that asked for packets only late, not
  // lost) and those parity rebuilt: where the rounds came from.
  out["datagrams_retransmitted"] = after.datagrams_retransmitted - before.datagrams_retransmitted;
  out["duplicates"] = reject_count(after, wire::RejectReason::kDuplicate) -
                      reject_count(before, wire::RejectReason::kDuplicate);
  out["packets_rebuilt"] = after.packets_rebuilt - before.packets_rebuilt;
  // The control connections' TCP resends: whether the control channel waits on its own losses.
  out["control_retransmits"] = after.control_retransmits - before.control_retransmits;
  out["control_rto_max_us"] = after.control_rto_max_us;
  std::array<std::uint64_t, 8> by_rounds{};
  for (std::size_t r = 0; r < by_rounds.size(); ++r) {
    by_rounds[r] = after.settled_by_rounds[r] - before.settled_by_rounds[r];
  }
  out["settled_by_rounds"] = by_rounds;
  out["first_round_time"] = histogram_json(after.first_round_time.since(before.first_round_time));
  out["recovery_time"] = histogram_json(after.recovery_time.since(before.recovery_time));
  return out;
}

std::uint32_t rounds_quantile(const std::array<std::uint64_t, 8>& by_rounds, double q) {
  if (!(q >= 0.0 && q <= 1.0)) {
    throw std::invalid_argument("rounds_quantile: q = " + std::to_string(q) + " is outside [0, 1]");
  }
  std::uint64_t total = 0;
  for (const auto count : by_rounds) total += count;
  if (total == 0) return 0;
  const auto rank = std::max<std::uint64_t>(
      1, static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(total))));
  std::uint64_t seen = 0;
  for (std::size_t r = 0; r < by_rounds.size(); ++r) {
    seen += by_rounds[r];
    if (seen >= rank) return static_cast<std::uint32_t>(r);
  }
  return static_cast<std::uint32_t>(by_rounds.size() - 1);
}

nlohmann::json summarize_settlement(const std::vector<nlohmann::json>& ranks) {
  std::uint64_t complete = 0;
  std::uint64_t within_budget = 0;
  std::uint64_t before_round_end = 0;
  std::uint64_t by_group = 0;
  std::uint64_t deadlines = 0;
  std::uint64_t retransmitted = 0;
  std::uint64_t duplicates = 0;
  std::uint64_t rebuilt = 0;
  std::uint64_t control_retransmits = 0;
  std::uint64_t control_rto_max_us = 0;
  std::array<std::uint64_t, 8> by_rounds{};
  DurationHistogram first_round;
  DurationHistogram recovery;
  for (const auto& rank : ranks) {
    complete += rank.at("settled_complete").get<std::uint64_t>();
    within_budget += rank.at("settled_within_budget").get<std::uint64_t>();
    before_round_end += rank.at("settled_before_round_end").get<std::uint64_t>();
    by_group += rank.at("settled_by_group").get<std::uint64_t>();
    deadlines += rank.at("receive_deadlines").get<std::uint64_t>();
    retransmitted += rank.value("datagrams_retransmitted", std::uint64_t{0});
    duplicates += rank.value("duplicates", std::uint64_t{0});
    rebuilt += rank.value("packets_rebuilt", std::uint64_t{0});
    control_retransmits += rank.value("control_retransmits", std::uint64_t{0});
    control_rto_max_us =
        std::max(control_rto_max_us, rank.value("control_rto_max_us", std::uint64_t{0}));
    const auto rounds = rank.at("settled_by_rounds").get<std::array<std::uint64_t, 8>>();
    for (std::size_t r = 0; r < by_rounds.size(); ++r) by_rounds[r] += rounds[r];
    first_round.merge(histogram_from(rank.at("first_round_time")));
    recovery.merge(histogram_from(rank.at("recovery_time")));
  }
  const std::uint64_t settled = complete + within_budget;
  nlohmann::json s;
  s["messages"] = settled + deadlines;
  s["settled_complete"] = complete;
  s["settled_within_budget"] = within_budget;
  s["settled_before_round_end"] = before_round_end;
  s["settled_by_group"] = by_group;
  s["receive_deadlines"] = deadlines;
  s["datagrams_retransmitted"] = retransmitted;
  s["duplicates"] = duplicates;
  s["packets_rebuilt"] = rebuilt;
  s["control_retransmits"] = control_retransmits;
  s["control_rto_max_ms"] = static_cast<double>(control_rto_max_us) / 1e3;
  s["settled_by_rounds"] = by_rounds;
  s["no_recovery_fraction"] =
      settled > 0 ? static_cast<double>(by_rounds[0]) / static_cast<double>(settled) : 0.0;
  s["rounds_p50"] = rounds_quantile(by_rounds, 0.5);
  s["rounds_p99"] = rounds_quantile(by_rounds, 0.99);
  s["first_round_p50_ms"] = first_round.quantile(0.5) * 1e3;
  s["first_round_p99_ms"] = first_round.quantile(0.99) * 1e3;
  s["recovery_p50_ms"] = recovery.quantile(0.5) * 1e3;
  s["recovery_p99_ms"] = recovery.quantile(0.99) * 1e3;
  s["recovery_mean_ms"] = recovery.count() > 0
                              ? recovery.sum_seconds() / static_cast<double>(recovery.count()) * 1e3
                              : 0.0;
  return s;
}

std::string describe_settlement(const nlohmann::json& s) {
  std::ostringstream out;
  out << std::fixed << "messages " << s.at("messages").get<std::uint64_t>() << ": "
      << std::setprecision(1) << s.at("no_recovery_fraction").get<double>() * 100
      << "% without a recovery round, rounds p50/p99 " << s.at("rounds_p50").get<std::uint32_t>()
      << "/" << s.at("rounds_p99").get<std::uint32_t>() << ", recovery p50/p99 "
      << std::setprecision(2) << s.at("recovery_p50_ms").get<double>() << "/"
      << s.at("recovery_p99_ms").get<double>() << " ms";
  return out.str();
}

}  // namespace dlcp::tools
