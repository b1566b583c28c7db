// Where dlcp's data files live (the model profiles, the demo's plot script): installed as
// <prefix>/share/dlcp beside <prefix>/bin, and copied into the build tree as <build>/share/dlcp
// when CMake configures, so that no source path is compiled into a program. C++17 (the
// simulator uses it).
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace dlcp::workload {

// The first `share/dlcp` directory found in the program's directory or one of its parents (at
// most `max_levels` up): <prefix>/bin/dlcp finds <prefix>/share/dlcp, <build>/tools/dlcp and
// <build>/tests/testbed/... find <build>/share/dlcp.
std::optional<std::filesystem::path> find_data_dir(const std::filesystem::path& program_dir,
                                                   int max_levels = 4);

// $DLCP_DATA_DIR, else find_data_dir() from the running program (/proc/self/exe). Throws
// std::runtime_error saying where it looked when there is none.
std::filesystem::path data_dir();

}  // namespace dlcp::workload
