#include "workload/data_files.hpp"

#include <cstdlib>
#include <stdexcept>
#include <system_error>

namespace dlcp::workload {

std::optional<std::filesystem::path> find_data_dir(const std::filesystem::path& program_dir,
                                                   int max_levels) {
  std::filesystem::path dir = program_dir;
  for (int level = 0; level <= max_levels && !dir.empty(); ++level) {
    const auto candidate = dir / "share" / "dlcp";
    std::error_code error;
    if (std::filesystem::is_directory(candidate, error)) return candidate;
    if (dir == dir.parent_path()) break;
    dir = dir.parent_path();
  }
  return std::nullopt;
}

std::filesystem::path data_dir() {
  if (const char* dir = std::getenv("DLCP_DATA_DIR"); dir != nullptr && *dir != '\0') return dir;
  std::error_code error;
  const auto program = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) {
    throw std::runtime_error("cannot find dlcp's data files: /proc/self/exe is unreadable (" +
                             error.message() + "); set DLCP_DATA_DIR to <prefix>/share/dlcp");
  }
  if (auto found = find_data_dir(program.parent_path())) return *found;
  throw std::runtime_error("cannot find dlcp's data files (share/dlcp) in " +
                           program.parent_path().string() +
                           " or its parents; set DLCP_DATA_DIR to <prefix>/share/dlcp");
}

}  // namespace dlcp::workload
