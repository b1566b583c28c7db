#include "transport_counters.hpp"

namespace py = pybind11;

namespace dlcp::python {

py::dict counters_dict(const TransportCounters& counters) {
  py::dict result;
  result["datagrams_sent"] = counters.datagrams_sent;
  result["datagrams_received"] = counters.datagrams_received;
  result["bytes_sent"] = counters.bytes_sent;
  result["bytes_received"] = counters.bytes_received;
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
  return result;
}

}  // namespace dlcp::python
