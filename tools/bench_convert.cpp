#include "bench_convert.hpp"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "collectives/reduction.hpp"
#include "dlcp/error.hpp"
#include "summary.hpp"
#include "tsc_rate.hpp"
#include "wire/conversion_path.hpp"
#include "wire/values.hpp"

namespace dlcp::tools {
namespace {

// Each repetition converts at least this many values, so that a packet-sized case runs long
// enough (a few hundred microseconds) for the clock's resolution not to matter.
constexpr std::size_t kValuesPerRepetition = std::size_t{1} << 21;

// Buffers for one size: `values` float32 values cut into packets of `packet` values.
struct Workload {
  std::size_t values = 0;
  std::size_t packet = 0;
  std::vector<float> floats;   // gradient-like inputs
  std::vector<float> decoded;  // where decodes land
  std::vector<float> acc;      // a reduction's accumulator
  std::vector<std::uint16_t> counts;
  std::vector<std::byte> bf16;  // the inputs encoded, packet after packet
  std::vector<std::byte> fp16;
};

std::size_t packets_in(const Workload& w) {
  return (w.values + w.packet - 1) / w.packet;
}

// Calls f(first, n, packet_index) for every packet of the workload.
template <typename F>
void for_each_packet(const Workload& w, F&& f) {
  for (std::size_t p = 0, first = 0; first < w.values; ++p, first += w.packet) {
    f(first, std::min(w.packet, w.values - first), p);
  }
}

std::span<std::byte> payload_of(std::vector<std::byte>& packed, WireDtype dtype, const Workload& w,
                                std::size_t p, std::size_t n) {
  const std::size_t stride = wire::payload_bytes(dtype, w.packet);
  return std::span(packed).subspan(p * stride, wire::payload_bytes(dtype, n));
}

std::vector<std::byte>& packed_for(Workload& w, WireDtype dtype) {
  return dtype == WireDtype::kBfloat16 ? w.bf16 : w.fp16;
}

Workload make_workload(std::size_t values, std::size_t packet, std::mt19937& rng) {
  Workload w;
  w.values = values;
  w.packet = packet;
  // Gradient-like: normal, a few binades apart from one packet to the next.
  std::normal_distribution<float> normal(0.0f, 1e-3f);
  w.floats.resize(values);
  for (float& v : w.floats) v = normal(rng);
  w.decoded.resize(values);
  w.acc.assign(values, 0.0f);
  w.counts.assign(packets_in(w), 1);
  for (const WireDtype dtype : {WireDtype::kBfloat16, WireDtype::kFloat16}) {
    auto& packed = packed_for(w, dtype);
    packed.resize(packets_in(w) * wire::payload_bytes(dtype, packet));
    for_each_packet(w, [&](std::size_t first, std::size_t n, std::size_t p) {
      wire::encode_values(std::span(w.floats).subspan(first, n), dtype,
                          payload_of(packed, dtype, w, p, n));
    });
  }
  return w;
}

struct Case {
  std::string operation;
  WireDtype dtype;
  std::function<void(Workload&)> pass;  // one pass over the workload's values
};

void encode_pass(Workload& w, WireDtype dtype) {
  auto& packed = packed_for(w, dtype);
  for_each_packet(w, [&](std::size_t first, std::size_t n, std::size_t p) {
    wire::encode_values(std::span(w.floats).subspan(first, n), dtype,
                        payload_of(packed, dtype, w, p, n));
  });
}

void decode_pass(Workload& w, WireDtype dtype) {
  auto& packed = packed_for(w, dtype);
  for_each_packet(w, [&](std::size_t first, std::size_t n, std::size_t p) {
    wire::decode_values(payload_of(packed, dtype, w, p, n), dtype,
                        std::span(w.decoded).subspan(first, n));
  });
}

void reduce_pass(Workload& w) {
  collectives::accumulate(w.acc, w.counts, w.decoded, w.counts, w.packet);
  // Counts only grow; keep them from wrapping over many passes.
  std::ranges::fill(w.counts, std::uint16_t{1});
}

std::vector<Case> cases() {
  std::vector<Case> all;
  for (const WireDtype dtype : {WireDtype::kBfloat16, WireDtype::kFloat16}) {
    all.push_back({"encode", dtype, [dtype](Workload& w) { encode_pass(w, dtype); }});
    all.push_back({"decode", dtype, [dtype](Workload& w) { decode_pass(w, dtype); }});
    // The receive side of a reduction: packets decoded into a segment, then the segment added.
    all.push_back({"decode, then reduce", dtype, [dtype](Workload& w) {
                     decode_pass(w, dtype);
                     reduce_pass(w);
                   }});
    all.push_back({"round_to_wire", dtype,
                   [dtype](Workload& w) { wire::round_to_wire(w.decoded, dtype, w.packet); }});
  }
  all.push_back({"reduce", WireDtype::kFloat32, reduce_pass});
  return all;
}

struct Measured {
  double ns_per_value = 0;
};

Measured measure(const Case& c, Workload& w, int reps) {
  const std::size_t passes = std::max<std::size_t>(1, kValuesPerRepetition / w.values);
  c.pass(w);  // warm the caches and the branch predictors
  std::vector<double> ns_per_value;
  for (int r = 0; r < reps; ++r) {
    const auto start = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < passes; ++i) c.pass(w);
    const auto stop = std::chrono::steady_clock::now();
    const double ns = std::chrono::duration<double, std::nano>(stop - start).count();
    ns_per_value.push_back(ns / static_cast<double>(passes * w.values));
  }
  return {percentile(ns_per_value, 0.5)};
}

// Keeps the benchmark on the core it started on, so that a migration does not land in a sample.
void stay_on_this_core() {
  const int cpu = sched_getcpu();
  if (cpu < 0) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  sched_setaffinity(0, sizeof(set), &set);
}

void choose_conversion_path(const std::string& name) {
  for (const wire::ConversionPath path : wire::supported_conversion_paths()) {
    if (to_string(path) == name) {
      wire::use_conversion_path(path);
      return;
    }
  }
  throw Error(ErrorCode::kInvalidArgument, -1,
              "--path " + name + ": not a conversion path this CPU supports");
}

std::string format_row(const nlohmann::json& row, bool cycles) {
  char line[160];
  std::snprintf(line, sizeof(line), "%-20s %-5s %-7s %8zu %10.2f %10.3f",
                row["operation"].get<std::string>().c_str(),
                row["dtype"].get<std::string>().c_str(), row["size"].get<std::string>().c_str(),
                row["values"].get<std::size_t>(), row["values_per_ns"].get<double>(),
                row["ns_per_value"].get<double>());
  std::string text = line;
  if (cycles) {
    std::snprintf(line, sizeof(line), " %12.3f", row["tsc_cycles_per_value"].get<double>());
    text += line;
  }
  return text;
}

}  // namespace

nlohmann::json run_convert_bench(const ConvertBenchOptions& o) {
  const std::size_t packet =
      wire::values_fitting(WireDtype::kBfloat16, static_cast<std::size_t>(o.packet_bytes));
  const auto large = static_cast<std::size_t>(o.mib * 1024 * 1024 / sizeof(float));
  if (packet == 0 || large == 0) {
    throw Error(ErrorCode::kInvalidArgument, -1,
                "--packet-bytes and --mib must give at least one value");
  }
  if (!o.path.empty()) choose_conversion_path(o.path);
  stay_on_this_core();
  const double tsc_ghz = invariant_tsc_ghz();
  std::mt19937 rng(1);
  struct Size {
    std::string name;
    Workload workload;
  };
  std::vector<Size> sizes;
  sizes.push_back({"packet", make_workload(packet, packet, rng)});
  sizes.push_back({"large", make_workload(large, packet, rng)});

  nlohmann::json out;
  out["packet_values"] = packet;
  out["large_values"] = large;
  out["repetitions"] = o.reps;
  out["tsc_ghz"] = tsc_ghz;
  out["conversion_path"] = std::string(to_string(wire::conversion_path()));
  out["cases"] = nlohmann::json::array();
  for (const Case& c : cases()) {
    for (Size& size : sizes) {
      const Measured m = measure(c, size.workload, o.reps);
      nlohmann::json row;
      row["operation"] = c.operation;
      row["dtype"] = to_string(c.dtype);
      row["size"] = size.name;
      row["values"] = size.workload.values;
      row["ns_per_value"] = m.ns_per_value;
      row["values_per_ns"] = 1.0 / m.ns_per_value;
      if (tsc_ghz > 0) row["tsc_cycles_per_value"] = m.ns_per_value * tsc_ghz;
      out["cases"].push_back(row);
    }
  }
  return out;
}

std::string convert_table(const nlohmann::json& summary) {
  const double tsc_ghz = summary["tsc_ghz"].get<double>();
  std::ostringstream table;
  table << "bench convert: one thread, medians of " << summary["repetitions"].get<int>()
        << " repetitions; packet = " << summary["packet_values"].get<std::size_t>()
        << " values, large = " << summary["large_values"].get<std::size_t>()
        << " values, converted a packet per call; conversion path "
        << summary["conversion_path"].get<std::string>();
  if (tsc_ghz > 0) table << "; TSC " << tsc_ghz << " GHz (cycles are TSC reference cycles)";
  table << "\noperation            dtype size      values  values/ns   ns/value"
        << (tsc_ghz > 0 ? "  cycles/value" : "") << "\n";
  for (const auto& row : summary["cases"]) table << format_row(row, tsc_ghz > 0) << "\n";
  return table.str();
}

}  // namespace dlcp::tools
