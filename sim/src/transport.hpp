// What a workload asks of a transport: deliver this many bytes of this layer from one host to
// another, and say when the receiver has it. Flow completion times are logged here.
#pragma once

#include <cstdint>
#include <functional>
#include <ostream>
#include <vector>

#include "ns3/nstime.h"

namespace dlcp::sim {

// ns3::MicroSeconds takes integers; the configuration has fractions of microseconds.
inline ns3::Time micros(double us) {
  return ns3::NanoSeconds(static_cast<std::int64_t>(us * 1000.0 + 0.5));
}

enum class FlowKind { kGradient, kBackground };
// What a gradient flow is for in its collective (background flows have none).
enum class FlowPhase { kNone, kPush, kPull, kReduceScatter, kAllGather };
const char* flow_kind_name(FlowKind kind);
const char* flow_phase_name(FlowPhase phase);

struct Message {
  int src = 0;
  int dst = 0;
  std::uint64_t bytes = 0;
  int layer = 0;  // forward order, 0 = nearest the input
  int num_layers = 1;
  double loss_budget = 0.0;  // only dlcp uses it; TCP always delivers everything
  FlowKind kind = FlowKind::kGradient;
  FlowPhase phase = FlowPhase::kNone;
  // dlcp: receives that share one loss budget (MessageOptions::budget_group and
  // budget_group_size; 0 = none), as the library's collectives group them. TCP ignores them.
  std::uint64_t budget_group = 0;
  std::uint32_t budget_group_size = 0;
};

using Delivered = std::function<void()>;

class MessageTransport {
 public:
  virtual ~MessageTransport() = default;
  virtual void send(const Message& message, Delivered on_delivered) = 0;
};

// One finished flow, kept only when the run writes a flow file (--flows).
struct FlowRecord {
  Message message;
  ns3::Time posted;
  ns3::Time finished;
};

struct FlowLog {
  std::vector<double> gradient_fct_us;
  std::vector<double> background_fct_us;
  std::uint64_t gradient_started = 0;
  std::uint64_t background_started = 0;
  bool keep_records = false;
  std::vector<FlowRecord> records;
  std::function<void()> after_finished;  // e.g. a progress line; may be empty

  void started(FlowKind kind) {
    ++(kind == FlowKind::kGradient ? gradient_started : background_started);
  }
  void finished(const Message& message, ns3::Time started_at);
};

// The records as CSV, a header line first: kind,phase,src,dst,bytes,layer,posted_us,finished_us.
void write_flow_csv(const std::vector<FlowRecord>& records, std::ostream& out);

}  // namespace dlcp::sim
