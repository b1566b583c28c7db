// FlowLog (transport.hpp): completion times for the summary and, with --flows, the flows.
#include <cstdio>

#include "ns3/simulator.h"
#include "transport.hpp"

namespace dlcp::sim {

void FlowLog::finished(const Message& message, ns3::Time started_at) {
  const ns3::Time now = ns3::Simulator::Now();
  const double fct_us = (now - started_at).GetSeconds() * 1e6;
  (message.kind == FlowKind::kGradient ? gradient_fct_us : background_fct_us).push_back(fct_us);
  if (keep_records) records.push_back(FlowRecord{message, started_at, now});
  if (after_finished) after_finished();
}

const char* flow_kind_name(FlowKind kind) {
  return kind == FlowKind::kGradient ? "gradient" : "background";
}

const char* flow_phase_name(FlowPhase phase) {
  switch (phase) {
    case FlowPhase::kPush:
      return "push";
    case FlowPhase::kPull:
      return "pull";
    case FlowPhase::kReduceScatter:
      return "reduce-scatter";
    case FlowPhase::kAllGather:
      return "all-gather";
    case FlowPhase::kNone:
      break;
  }
  return "-";
}

void write_flow_csv(const std::vector<FlowRecord>& records, std::ostream& out) {
  out << "kind,phase,src,dst,bytes,layer,posted_us,finished_us\n";
  char line[256];
  for (const FlowRecord& r : records) {
    const Message& m = r.message;
    std::snprintf(line, sizeof line, "%s,%s,%d,%d,%llu,%d,%.3f,%.3f\n", flow_kind_name(m.kind),
                  flow_phase_name(m.phase), m.src, m.dst, static_cast<unsigned long long>(m.bytes),
                  m.layer, r.posted.GetSeconds() * 1e6, r.finished.GetSeconds() * 1e6);
    out << line;
  }
}

}  // namespace dlcp::sim
