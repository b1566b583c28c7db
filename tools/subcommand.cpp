#include "subcommand.hpp"

#include <filesystem>
#include <iostream>

namespace dlcp::tools {

int run_program(CLI::App& app, const std::vector<SubcommandRunner>& runners, int argc,
                char** argv) {
  CLI11_PARSE(app, argc, argv);
  const std::string program = std::filesystem::path(argv[0]).filename().string();
  try {
    for (const auto& run : runners) {
      if (const int status = run({&argc, &argv}); status >= 0) return status;
    }
    std::cerr << program << ": no command ran\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << program << ": " << e.what() << "\n";
    return 1;
  }
}

}  // namespace dlcp::tools
