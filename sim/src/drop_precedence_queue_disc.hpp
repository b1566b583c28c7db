// A switch egress port: 8 strict-priority bands sharing one byte buffer, with drop precedence,
// optional ECN marking and optional pFabric-style eviction.
//
//  - band: from the attached packet filter (DscpPacketFilter), 0 = most urgent;
//  - drop precedence: a drop-eligible packet is refused once the port (or, with
//    eligible_per_band on, its own band's queue) holds more than drop_eligible_bytes, a
//    protected one only when the buffer (buffer_bytes) is full;
//  - ECN: an ECN-capable packet is CE-marked when its band's queue (or, with mark_per_band off,
//    the whole port) holds more than mark_bytes (0 = off), on the instantaneous occupancy as
//    DCTCP's switches do. Per-queue marking keeps best-effort backlog from marking urgent bands;
//  - eviction (pFabric-like): when the buffer is full, packets of a strictly less urgent band are
//    dropped to make room before the arriving packet is refused;
//  - random loss (a gray failure): a set share of arriving packets is dropped before anything
//    else, whatever its band or precedence.
#pragma once

#include <array>
#include <cstdint>
#include <random>

#include "dscp_classifier.hpp"
#include "library.hpp"
#include "ns3/queue-disc.h"

namespace dlcp::sim {

struct PortCounters {
  std::uint64_t dropped_drop_eligible = 0;  // refused above the drop-eligible threshold
  std::uint64_t dropped_full = 0;           // refused with the buffer full
  std::uint64_t evicted = 0;                // pushed out by a more urgent packet
  std::uint64_t marked = 0;                 // CE marks
  std::uint64_t enqueued = 0;
  std::array<std::uint64_t, kBands> enqueued_by_band{};  // shows the DSCPs reach the switches
  std::uint64_t arrived = 0;                             // every packet offered to the port
  std::uint64_t dropped_random = 0;                      // lost to the gray failure
};

class DropPrecedenceQueueDisc : public ns3::QueueDisc {
 public:
  static ns3::TypeId GetTypeId();
  DropPrecedenceQueueDisc();

  // Which codepoints are drop-eligible, from the library's switch plan, looked up per packet.
  void set_policy(const library::Policy& policy) {
    drop_eligible_ = policy.switch_bands(/*best_effort_alone=*/false).drop_eligible;
  }
  // Drops `share` of arriving packets at random, from a generator of its own seeded with `seed`
  // (not one of ns-3's streams, so healthy runs draw exactly the random numbers they always did).
  void set_random_loss(double share, std::uint64_t seed);
  const PortCounters& counters() const { return counters_; }

 private:
  bool DoEnqueue(ns3::Ptr<ns3::QueueDiscItem> item) override;
  ns3::Ptr<ns3::QueueDiscItem> DoDequeue() override;
  bool CheckConfig() override;
  void InitializeParams() override {}

  // Drops queued packets of bands less urgent than `band` until `bytes` more fit; false when
  // they cannot be made to fit.
  bool evict_for(int band, std::uint32_t bytes);
  bool lose_at_random();

  std::array<bool, library::kDscpCount> drop_eligible_ =
      library::Policy().switch_bands(false).drop_eligible;
  std::uint32_t buffer_bytes_ = 0;
  std::uint32_t drop_eligible_bytes_ = 0;
  std::uint32_t mark_bytes_ = 0;
  bool mark_per_band_ = true;
  bool eligible_per_band_ = false;
  bool evict_lower_priority_ = false;
  std::uint64_t loss_threshold_ = 0;  // a draw below it is lost; 0 = no random loss
  std::mt19937_64 random_;
  PortCounters counters_;
};

}  // namespace dlcp::sim
