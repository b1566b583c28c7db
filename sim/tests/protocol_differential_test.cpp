// The simulator and the library's socket engine must take the same decisions on the same packets:
// both drive the protocol core (src/protocol/), the engine directly and the simulator through
// its C++17 facade (src/library.hpp). This test replays random packet traces (loss, duplicates,
// reordering, control that outruns data) through the core as the engine drives it and through
// the facade as the simulator's DlcpTransport drives it, and fails on the first decision that
// differs: a settlement, a missing-ranges report, or the packets a report makes the sender send.
//
// Compiled as C++20 (it includes the core's headers); the facade's header is C++17-clean.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "../src/library.hpp"
#include "policy/policy.hpp"
#include "protocol/message_receiver.hpp"
#include "protocol/message_sender.hpp"

namespace dlcp::sim {
namespace {

constexpr std::int64_t kQuietNs = 50'000;
constexpr std::int64_t kPacketGapNs = 1'000;

struct Trace {
  std::uint32_t total_floats = 0;
  std::uint32_t stride = 0;
  std::uint32_t budget_ppm = 0;
  std::vector<std::uint8_t> protected_flags;
  double loss = 0;
  double duplicates = 0;
  double path_loss = 0;  // what the receiving host knows of its path to the sender
  std::uint64_t seed = 0;
};

Trace random_trace(std::mt19937_64& rng) {
  Trace trace;
  trace.total_floats = std::uniform_int_distribution<std::uint32_t>(1, 6000)(rng);
  trace.stride = std::uniform_int_distribution<std::uint32_t>(1, 97)(rng);
  const std::uint32_t budgets[] = {0, 1000, 10000, 50000, 200000, 500000};
  trace.budget_ppm = budgets[std::uniform_int_distribution<int>(0, 5)(rng)];
  const std::uint32_t packets = (trace.total_floats + trace.stride - 1) / trace.stride;
  const double share = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
  for (std::uint32_t seq = 0; seq < packets; ++seq) {
    const bool is_protected = trace.budget_ppm == 0 || std::bernoulli_distribution(share)(rng);
    trace.protected_flags.push_back(is_protected ? 1 : 0);
  }
  const double losses[] = {0.0, 0.01, 0.1, 0.3, 0.6};
  trace.loss = losses[std::uniform_int_distribution<int>(0, 4)(rng)];
  trace.duplicates = std::bernoulli_distribution(0.3)(rng) ? 0.05 : 0.0;
  trace.path_loss = std::uniform_real_distribution<double>(0.0, 0.4)(rng);
  trace.seed = rng();
  return trace;
}

// The two drivers, each recording its decisions as text, one line per decision.
struct EngineDriver {
  protocol::MessageSender sender;
  protocol::MessageReceiver receiver;
  std::uint32_t budget_ppm;

  EngineDriver(const Trace& trace, TimePoint t0)
      : sender(trace.total_floats, static_cast<std::uint16_t>(trace.stride),
               policy::PacketRanking{trace.protected_flags,
                                     policy::first_round_order(trace.protected_flags)}),
        receiver(trace.total_floats, trace.budget_ppm, t0),
        budget_ppm(trace.budget_ppm) {
    // The FlowStart, as the engine applies it (apply_flow).
    const wire::FlowStart flow = sender.flow_start(1, 0, trace.budget_ppm);
    receiver.accept_shape(flow.total_floats, flow.stride_floats);
    receiver.on_flow(flow.protected_bitmap, flow.loss_budget_ppm, t0);
  }
};

struct SimulatorDriver {
  library::MessageSender sender;
  library::MessageReceiver receiver;

  SimulatorDriver(const Trace& trace, std::int64_t t0_ns)
      : sender(trace.total_floats, trace.stride, trace.protected_flags),
        receiver(trace.total_floats, trace.stride, trace.budget_ppm, trace.protected_flags, t0_ns) {
  }
};

TimePoint at(std::int64_t ns) {
  return TimePoint(std::chrono::nanoseconds(ns));
}

std::string ranges_text(const std::vector<wire::SeqRange>& ranges) {
  std::ostringstream out;
  for (const auto& range : ranges) out << range.first << "+" << range.count << " ";
  return out.str();
}

std::string ranges_text(const std::vector<library::SeqRange>& ranges) {
  std::ostringstream out;
  for (const auto& range : ranges) out << range.first << "+" << range.count << " ";
  return out.str();
}

// Runs the trace's rounds until the receiver settles (or 50 rounds pass); returns each driver's
// decisions.
std::pair<std::vector<std::string>, std::vector<std::string>> replay(const Trace& trace) {
  std::mt19937_64 rng(trace.seed);
  std::int64_t now = 1'000'000;
  EngineDriver engine(trace, at(now));
  SimulatorDriver simulator(trace, now);
  std::vector<std::string> engine_log;
  std::vector<std::string> simulator_log;
  bool settled = false;
  for (int round = 0; round < 50 && !settled; ++round) {
    // The sender's round: both senders must send the same packets in the same order.
    std::vector<std::uint32_t> sent;
    while (engine.sender.has_next()) {
      const std::uint32_t seq = engine.sender.take_next();
      sent.push_back(seq);
      engine_log.push_back("send " + std::to_string(seq) + " protected " +
                           std::to_string(engine.sender.sends_protected(seq)));
    }
    while (simulator.sender.has_next()) {
      const std::uint32_t seq = simulator.sender.take_next();
      simulator_log.push_back("send " + std::to_string(seq) + " protected " +
                              std::to_string(simulator.sender.sends_protected(seq)));
    }
    // The network: loss, duplicates, a little reordering, and the RoundFinished that overtakes
    // the last few packets.
    std::vector<std::uint32_t> arriving;
    for (const std::uint32_t seq : sent) {
      if (std::bernoulli_distribution(trace.loss)(rng)) continue;
      arriving.push_back(seq);
      if (std::bernoulli_distribution(trace.duplicates)(rng)) arriving.push_back(seq);
    }
    for (std::size_t i = 1; i < arriving.size(); ++i) {
      if (std::bernoulli_distribution(0.2)(rng)) std::swap(arriving[i - 1], arriving[i]);
    }
    const std::size_t overtaken = std::uniform_int_distribution<std::size_t>(
        0, std::min<std::size_t>(3, arriving.size()))(rng);
    const std::size_t finished_at = arriving.size() - overtaken;
    for (std::size_t i = 0; i <= arriving.size() && !settled; ++i) {
      if (i == finished_at) {
        const auto round_number = static_cast<std::uint16_t>(engine.sender.round());
        engine.receiver.on_round_finished(round_number, at(now));
        simulator.receiver.on_round_finished(simulator.sender.round(), now);
      }
      if (i == arriving.size()) break;
      now += kPacketGapNs;
      const std::uint32_t seq = arriving[i];
      // The engine refuses a duplicate before placing it (Engine::placement).
      if (!engine.receiver.has_packet(seq)) {
        engine.receiver.on_packet(seq, at(now));
        if (engine.receiver.settles_alone(false)) {
          engine_log.push_back("settle at " + std::to_string(seq) + " state " +
                               std::to_string(static_cast<int>(engine.receiver.settlement())));
        }
      }
      if (simulator.receiver.on_packet(seq, now) && simulator.receiver.settles()) {
        const auto missing = simulator.receiver.missing_floats();
        simulator_log.push_back(
            "settle at " + std::to_string(seq) + " state " +
            std::to_string(missing == 0 ? static_cast<int>(protocol::Settlement::kComplete)
                                        : static_cast<int>(protocol::Settlement::kBoundReached)));
      }
      settled = engine.receiver.settles_alone(false) || simulator.receiver.settles();
    }
    if (settled) break;
    // The report, when each driver's timer says it is due.
    const auto engine_due = engine.receiver.report_due(std::chrono::nanoseconds(kQuietNs));
    const std::int64_t simulator_due = simulator.receiver.report_due_ns(kQuietNs);
    engine_log.push_back("report due " +
                         std::to_string(engine_due ? engine_due->time_since_epoch().count() : -1));
    simulator_log.push_back("report due " + std::to_string(simulator_due));
    if (!engine_due) break;
    now = std::max(now, engine_due->time_since_epoch().count());
    const auto request = engine.receiver.take_report(at(now), std::chrono::nanoseconds(kQuietNs),
                                                     trace.path_loss, 0);
    std::uint32_t simulator_round = 0;
    std::vector<library::SeqRange> simulator_ranges;
    const bool simulator_reported = simulator.receiver.take_report(
        now, kQuietNs, trace.path_loss, simulator_round, simulator_ranges);
    engine_log.push_back(request ? "report round " + std::to_string(request->round) + ": " +
                                       ranges_text(request->ranges)
                                 : "no report");
    simulator_log.push_back(simulator_reported ? "report round " + std::to_string(simulator_round) +
                                                     ": " + ranges_text(simulator_ranges)
                                               : "no report");
    if (!request) break;
    const bool engine_round = engine.sender.on_missing_ranges(request->round, request->ranges) ==
                              protocol::MessageSender::ReportEffect::kNewRound;
    const bool simulator_round_started =
        simulator.sender.on_missing_ranges(simulator_round, simulator_ranges);
    engine_log.push_back("new round " + std::to_string(engine_round));
    simulator_log.push_back("new round " + std::to_string(simulator_round_started));
    now += kQuietNs;  // the report's trip back
  }
  return {engine_log, simulator_log};
}

TEST(ProtocolDifferential, SimulatorAndEngineDecideAlikeOnRandomTraces) {
  std::mt19937_64 rng(20261128);
  int settled_with_loss = 0;
  int recovered = 0;
  for (int i = 0; i < 400; ++i) {
    const Trace trace = random_trace(rng);
    const auto [engine, simulator] = replay(trace);
    ASSERT_EQ(engine.size(), simulator.size()) << "trace " << i;
    for (std::size_t k = 0; k < engine.size(); ++k) {
      ASSERT_EQ(engine[k], simulator[k]) << "trace " << i << ", decision " << k;
    }
    ASSERT_FALSE(engine.empty());
    if (engine.back().rfind("settle", 0) == 0 && engine.back().back() == '2') ++settled_with_loss;
    if (std::any_of(engine.begin(), engine.end(),
                    [](const std::string& line) { return line.rfind("new round 1", 0) == 0; })) {
      ++recovered;
    }
  }
  // The traces exercise both the budget and recovery rounds, not only clean deliveries.
  EXPECT_GT(settled_with_loss, 20);
  EXPECT_GT(recovered, 50);
}

TEST(ProtocolDifferential, ADifferentMarginWouldBeCaught) {
  // The check is sensitive: a receiver that asks with another loss estimate (the simulator's old
  // rule used the message's own loss, uncapped) takes a different decision on some trace.
  std::mt19937_64 rng(7);
  int differing = 0;
  for (int i = 0; i < 100; ++i) {
    Trace trace = random_trace(rng);
    trace.loss = 0.3;
    trace.budget_ppm = 100000;
    Trace other = trace;
    other.path_loss = trace.path_loss + 0.2;
    if (replay(trace).first != replay(other).first) ++differing;
  }
  EXPECT_GT(differing, 0);
}

}  // namespace
}  // namespace dlcp::sim
