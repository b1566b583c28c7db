// Counts the threads the whole process starts (the `dlcp-bench` binary interposes pthread_create,
// as allocation_counter.cpp replaces operator new), so a benchmark can show whether a steady-state
// operation starts threads. The running count alone cannot: a thread that starts and ends inside
// the timed loop leaves /proc/self/status's Threads: line unchanged.
#pragma once

#include <cstdint>

namespace dlcp::tools {

// Threads started by pthread_create (std::thread, std::async) since the process began.
std::uint64_t threads_started_so_far();

// Threads of this process now (the Threads: line of /proc/self/status); -1 when unreadable.
int threads_running();

}  // namespace dlcp::tools
