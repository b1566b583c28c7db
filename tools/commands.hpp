// Every subcommand, by audience. The product command `dlcp` (dlcp_main.cpp) runs the demo, the
// testbed, the switch configuration and the rendezvous store; `dlcp-bench` (bench_main.cpp) runs
// the benchmarks and their TCP baselines, with the heap-counting operator new that only a
// benchmark should carry (allocation_counter.hpp). `dlcp bench ...` hands over to dlcp-bench.
#pragma once

#include "subcommand.hpp"

namespace dlcp::tools {

// dlcp
SubcommandRunner add_demo_command(CLI::App& app);
SubcommandRunner add_testbed_commands(CLI::App& app);  // testbed up/down/status, switch-config
SubcommandRunner add_store_server_command(CLI::App& app);

// dlcp-bench
SubcommandRunner add_p2p_command(CLI::App& app);
SubcommandRunner add_pingpong_command(CLI::App& app);
SubcommandRunner add_convert_command(CLI::App& app);
SubcommandRunner add_allreduce_commands(CLI::App& app);  // allreduce, allreduce-rank
SubcommandRunner add_train_commands(CLI::App& app);      // train, train-rank

}  // namespace dlcp::tools
