// Running the system's network tools (ip, tc, nft, iperf3). The testbed drives real Linux parts
// through their own command-line tools; unit tests substitute a recorder for the runner.
#pragma once

#include <string>
#include <vector>

namespace dlcp::testbed {

struct CommandResult {
  int status = 0;      // exit status; 128 + signal when killed; 127 when it could not start
  std::string output;  // stdout and stderr, interleaved
};

class CommandRunner {
 public:
  virtual ~CommandRunner() = default;
  // Runs argv (argv[0] looked up in /usr/sbin, /sbin, /usr/bin, /bin, then PATH) with `input` on
  // its standard input and waits for it.
  virtual CommandResult run(const std::vector<std::string>& argv,
                            const std::string& input = "") = 0;
};

class SystemCommands final : public CommandRunner {
 public:
  CommandResult run(const std::vector<std::string>& argv, const std::string& input = "") override;
};

// Runs the command and throws std::runtime_error quoting the command and its output when it fails.
std::string run_checked(CommandRunner& runner, const std::vector<std::string>& argv,
                        const std::string& input = "");

// The command line as one would type it (for error messages and dry runs).
std::string quote_command(const std::vector<std::string>& argv);

// Full path of a program, or "" when it is not installed.
std::string find_program(const std::string& name);

}  // namespace dlcp::testbed
