#include "drop_precedence_queue_disc.hpp"

#include "dscp_classifier.hpp"
#include "ns3/boolean.h"
#include "ns3/drop-tail-queue.h"
#include "ns3/ipv4-queue-disc-item.h"
#include "ns3/log.h"
#include "ns3/object-base.h"
#include "ns3/object-factory.h"
#include "ns3/uinteger.h"

namespace dlcp::sim {

NS_OBJECT_ENSURE_REGISTERED(DropPrecedenceQueueDisc);

namespace {
constexpr const char* kDropEligible = "drop-eligible above threshold";
constexpr const char* kFull = "buffer full";
constexpr const char* kEvicted = "evicted by a more urgent packet";
constexpr const char* kMarked = "ECN above threshold";
constexpr const char* kGray = "gray failure";
}  // namespace

ns3::TypeId DropPrecedenceQueueDisc::GetTypeId() {
  static ns3::TypeId tid =
      ns3::TypeId("dlcp::sim::DropPrecedenceQueueDisc")
          .SetParent<ns3::QueueDisc>()
          .SetGroupName("DlcpSim")
          .AddConstructor<DropPrecedenceQueueDisc>()
          .AddAttribute("BufferBytes", "Bytes the port may hold", ns3::UintegerValue(400000),
                        ns3::MakeUintegerAccessor(&DropPrecedenceQueueDisc::buffer_bytes_),
                        ns3::MakeUintegerChecker<std::uint32_t>())
          .AddAttribute("DropEligibleBytes",
                        "Occupancy above which drop-eligible packets are refused",
                        ns3::UintegerValue(200000),
                        ns3::MakeUintegerAccessor(&DropPrecedenceQueueDisc::drop_eligible_bytes_),
                        ns3::MakeUintegerChecker<std::uint32_t>())
          .AddAttribute("MarkBytes",
                        "Occupancy above which ECN-capable packets are CE-marked "
                        "(0 = no marking)",
                        ns3::UintegerValue(0),
                        ns3::MakeUintegerAccessor(&DropPrecedenceQueueDisc::mark_bytes_),
                        ns3::MakeUintegerChecker<std::uint32_t>())
          .AddAttribute("MarkPerBand",
                        "Compare the packet's own band's bytes with MarkBytes (per-queue "
                        "marking) instead of the whole port's",
                        ns3::BooleanValue(true),
                        ns3::MakeBooleanAccessor(&DropPrecedenceQueueDisc::mark_per_band_),
                        ns3::MakeBooleanChecker())
          .AddAttribute("DropEligiblePerBand",
                        "Compare the packet's own band's bytes with DropEligibleBytes instead of "
                        "the whole port's",
                        ns3::BooleanValue(false),
                        ns3::MakeBooleanAccessor(&DropPrecedenceQueueDisc::eligible_per_band_),
                        ns3::MakeBooleanChecker())
          .AddAttribute("EvictLowerPriority",
                        "pFabric-style: make room by dropping less urgent "
                        "packets",
                        ns3::BooleanValue(false),
                        ns3::MakeBooleanAccessor(&DropPrecedenceQueueDisc::evict_lower_priority_),
                        ns3::MakeBooleanChecker());
  return tid;
}

DropPrecedenceQueueDisc::DropPrecedenceQueueDisc()
    : ns3::QueueDisc(ns3::QueueDiscSizePolicy::NO_LIMITS) {}

bool DropPrecedenceQueueDisc::CheckConfig() {
  if (GetNQueueDiscClasses() > 0 || GetNPacketFilters() == 0) return false;
  if (GetNInternalQueues() == 0) {
    // One FIFO per band; the byte limits are enforced here, across bands, as one shared buffer.
    for (int band = 0; band < kBands; ++band) {
      auto queue = ns3::CreateObjectWithAttributes<ns3::DropTailQueue<ns3::QueueDiscItem>>(
          "MaxSize", ns3::QueueSizeValue(ns3::QueueSize("1000000p")));
      AddInternalQueue(queue);
    }
  }
  return GetNInternalQueues() == static_cast<std::size_t>(kBands) &&
         drop_eligible_bytes_ <= buffer_bytes_;
}

void DropPrecedenceQueueDisc::set_random_loss(double share, std::uint64_t seed) {
  // A draw below share * 2^64 is a loss; share < 1 is checked with the scenario's settings.
  loss_threshold_ = static_cast<std::uint64_t>(share * 0x1.0p64);
  random_.seed(seed);
}

bool DropPrecedenceQueueDisc::lose_at_random() {
  return loss_threshold_ > 0 && random_() < loss_threshold_;
}

bool DropPrecedenceQueueDisc::DoEnqueue(ns3::Ptr<ns3::QueueDiscItem> item) {
  ++counters_.arrived;
  if (lose_at_random()) {
    ++counters_.dropped_random;
    DropBeforeEnqueue(item, kGray);
    return false;
  }
  int band = Classify(item);
  if (band < 0 || band >= kBands) band = kBestEffortBand;
  const std::uint32_t size = item->GetSize();
  const std::uint32_t occupancy = GetNBytes();

  std::uint8_t tos = 0;
  if (auto ipv4_item = ns3::DynamicCast<ns3::Ipv4QueueDiscItem>(item)) {
    tos = ipv4_item->GetHeader().GetTos();
  }
  const std::uint32_t band_bytes = GetInternalQueue(static_cast<std::size_t>(band))->GetNBytes();
  if (drop_eligible_[static_cast<std::size_t>(tos >> 2)] &&
      (eligible_per_band_ ? band_bytes : occupancy) + size > drop_eligible_bytes_) {
    ++counters_.dropped_drop_eligible;
    DropBeforeEnqueue(item, kDropEligible);
    return false;
  }
  if (occupancy + size > buffer_bytes_) {
    if (!evict_lower_priority_ || !evict_for(band, size)) {
      ++counters_.dropped_full;
      DropBeforeEnqueue(item, kFull);
      return false;
    }
  }
  const std::uint32_t marked_queue = mark_per_band_ ? band_bytes : occupancy;
  if (mark_bytes_ > 0 && marked_queue + size > mark_bytes_ && Mark(item, kMarked)) {
    ++counters_.marked;
  }
  ++counters_.enqueued;
  ++counters_.enqueued_by_band[static_cast<std::size_t>(band)];
  return GetInternalQueue(static_cast<std::size_t>(band))->Enqueue(item);
}

bool DropPrecedenceQueueDisc::evict_for(int band, std::uint32_t bytes) {
  // Only evict when enough less urgent bytes exist; a futile eviction would lose packets for
  // nothing.
  std::uint32_t lower = 0;
  for (int b = band + 1; b < kBands; ++b) {
    lower += GetInternalQueue(static_cast<std::size_t>(b))->GetNBytes();
  }
  if (GetNBytes() - lower + bytes > buffer_bytes_) return false;
  for (int b = kBands - 1; b > band && GetNBytes() + bytes > buffer_bytes_; --b) {
    auto queue = GetInternalQueue(static_cast<std::size_t>(b));
    while (!queue->IsEmpty() && GetNBytes() + bytes > buffer_bytes_) {
      // Drops the oldest packet of the band: ns-3's queues remove only from the head. pFabric
      // drops "a" lowest-priority packet, so which one within the band is immaterial here.
      auto victim = queue->Dequeue();
      ++counters_.evicted;
      DropAfterDequeue(victim, kEvicted);
    }
  }
  return GetNBytes() + bytes <= buffer_bytes_;
}

ns3::Ptr<ns3::QueueDiscItem> DropPrecedenceQueueDisc::DoDequeue() {
  for (std::size_t band = 0; band < static_cast<std::size_t>(kBands); ++band) {
    auto queue = GetInternalQueue(band);
    if (!queue->IsEmpty()) return queue->Dequeue();
  }
  return nullptr;
}

}  // namespace dlcp::sim
