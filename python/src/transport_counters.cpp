#include "transport_counters.hpp"

namespace py = pybind11;

namespace dlcp::python {

py::dict counters_dict(const TransportCounters& counters) {
  py::dict result;
  result["datagrams_sent"] = counters.datagrams_sent;
  result["datagrams_received"] = counters.datagrams_received;
  result["bytes_sent"] = counters.bytes_sent;
  result["bytes_received"] = counters.bytes_received;
  result["datagrams_retransmitted"] = counters.datagrams_retransmitted;
  result["parity_sent"] = counters.parity_sent;
  result["parity_received"] = counters.parity_received;
  result["packets_rebuilt"] = counters.packets_rebuilt;
  result["bytes_retransmitted"] = counters.bytes_retransmitted;
  result["local_messages_sent"] = counters.local_messages_sent;
  result["local_messages_received"] = counters.local_messages_received;
  result["local_bytes_sent"] = counters.local_bytes_sent;
  result["local_bytes_received"] = counters.local_bytes_received;
  result["injected_drops"] = counters.injected_drops;
  result["injected_marks"] = counters.injected_marks;
  result["rejected"] = counters.rejected;
  py::dict reasons;
  for (const auto& [reason, count] : counters.rejected_by_reason) reasons[py::str(reason)] = count;
  result["rejected_by_reason"] = reasons;
  result["send_rate_bytes_per_s"] = counters.send_rate_bytes_per_s;
  result["shared_band_send_rate_bytes_per_s"] = counters.shared_band_send_rate_bytes_per_s;
  result["rate_reports"] = counters.rate_reports;
  result["rate_reports_congested"] = counters.rate_reports_congested;
  result["receive_rate_bytes_per_s"] = counters.receive_rate_bytes_per_s;
  result["io_thread_cpu_seconds"] = counters.io_thread_cpu_seconds;
  result["control_rto_min_us"] = counters.control_rto_min_us;
  result["control_retransmits"] = counters.control_retransmits;
  result["control_rto_max_us"] = counters.control_rto_max_us;
  result["settled_complete"] = counters.settled_complete;
  result["settled_within_budget"] = counters.settled_within_budget;
  result["settled_before_round_end"] = counters.settled_before_round_end;
  result["receive_deadlines"] = counters.receive_deadlines;
  py::list by_rounds;
  for (const auto count : counters.settled_by_rounds) by_rounds.append(count);
  result["settled_by_rounds"] = by_rounds;
  const auto quantiles = [](const DurationHistogram& histogram) {
    py::dict q;
    q["count"] = histogram.count();
    q["p50_s"] = histogram.quantile(0.5);
    q["p99_s"] = histogram.quantile(0.99);
    q["sum_s"] = histogram.sum_seconds();
    return q;
  };
  result["first_round_time"] = quantiles(counters.first_round_time);
  result["recovery_time"] = quantiles(counters.recovery_time);
  return result;
}

}  // namespace dlcp::python
