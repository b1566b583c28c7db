// `dlcp-bench convert`: its options and what runs it.
#include <iostream>
#include <memory>

#include "bench_convert.hpp"
#include "commands.hpp"

namespace dlcp::tools {

SubcommandRunner add_convert_command(CLI::App& app) {
  struct State {
    ConvertBenchOptions convert;
    bool json = false;
  };
  auto state = std::make_shared<State>();
  auto* command = app.add_subcommand(
      "convert",
      "Cost per value of the 16-bit wire conversions and the float32 reduction, on one core");
  command->add_option("--packet-bytes", state->convert.packet_bytes, "A 16-bit packet's payload")
      ->check(CLI::Range(2, 65535));
  command->add_option("--mib", state->convert.mib, "The larger buffer, in MiB of float32")
      ->check(CLI::PositiveNumber);
  command->add_option("--reps", state->convert.reps, "Timed repetitions per case (medians)")
      ->check(CLI::Range(1, 10000));
  command
      ->add_option("--path", state->convert.path,
                   "Conversion path (default: the fastest this CPU supports)")
      ->check(CLI::IsMember({"portable", "f16c", "avx2"}));
  command->add_flag("--json", state->json,
                    "Print the summary as one JSON line, the table on stderr");

  return [=](ProgramArguments) -> int {
    if (!command->parsed()) return -1;
    const auto summary = run_convert_bench(state->convert);
    // With --json, stdout carries the JSON line alone.
    (state->json ? std::cerr : std::cout) << convert_table(summary) << std::flush;
    if (state->json) std::cout << summary.dump() << std::endl;
    return 0;
  };
}

}  // namespace dlcp::tools
