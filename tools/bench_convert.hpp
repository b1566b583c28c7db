// `dlcp-bench convert`: what the 16-bit wire dtypes cost a core. Times, on one thread, the
// conversions a packet's payload goes through (encode_values, decode_values), the in-place
// rounding the collectives apply (round_to_wire), the float32 reduction (accumulate) and a
// received 16-bit segment's decode followed by its reduction, for one packet's values (in cache)
// and for a larger buffer (from memory), one packet per call as the data plane converts them.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace dlcp::tools {

struct ConvertBenchOptions {
  int packet_bytes = 1400;  // a 16-bit packet's payload; the float32 one is twice as large
  double mib = 4;           // the larger buffer, in float32
  int reps = 21;
  std::string path;  // the conversion path (wire/conversion_path.hpp); empty: the default
};

// Runs every case and returns the summary: per case, medians over the repetitions.
nlohmann::json run_convert_bench(const ConvertBenchOptions& options);

// The summary as a table, one line per case.
std::string convert_table(const nlohmann::json& summary);

}  // namespace dlcp::tools
