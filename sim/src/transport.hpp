// What a workload asks of a transport: deliver this many bytes of this layer from one host to
// another, and say when the receiver has it. Flow completion times are logged here.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "ns3/nstime.h"

namespace dlcp::sim {

// ns3::MicroSeconds takes integers; the configuration has fractions of microseconds.
inline ns3::Time micros(double us) {
  return ns3::NanoSeconds(static_cast<std::int64_t>(us * 1000.0 + 0.5));
}

enum class FlowKind { kGradient, kBackground };

struct Message {
  int src = 0;
  int dst = 0;
  std::uint64_t bytes = 0;
  int layer = 0;  // forward order, 0 = nearest the input
  int num_layers = 1;
  double loss_budget = 0.0;  // only dlcp uses it; TCP always delivers everything
  FlowKind kind = FlowKind::kGradient;
};

using Delivered = std::function<void()>;

class MessageTransport {
 public:
  virtual ~MessageTransport() = default;
  virtual void send(const Message& message, Delivered on_delivered) = 0;
};

struct FlowLog {
  std::vector<double> gradient_fct_us;
  std::vector<double> background_fct_us;
  std::uint64_t gradient_started = 0;
  std::uint64_t background_started = 0;

  void started(FlowKind kind) {
    ++(kind == FlowKind::kGradient ? gradient_started : background_started);
  }
  void finished(FlowKind kind, ns3::Time started_at);
};

}  // namespace dlcp::sim
