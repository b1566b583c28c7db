#include "store_failure.hpp"

#include "dlcp/error.hpp"

namespace dlcp::python {

std::string joined_keys(const std::vector<std::string>& keys) {
  std::string text;
  for (const auto& key : keys) text += (text.empty() ? "" : ", ") + key;
  return text;
}

void throw_store_failure(std::string_view store, const char* operation, const std::string& keys,
                         std::string_view what) {
  // Torch's and Python's stores say "Timeout", "Socket Timeout" or "Wait timeout".
  const bool timed_out = what.find("imeout") != std::string_view::npos;
  throw Error(timed_out ? ErrorCode::kDeadline : ErrorCode::kPeerLost, -1,
              std::string(store) + " " + operation + "('" + keys +
                  "') failed: " + std::string(what.substr(0, what.find('\n'))));
}

}  // namespace dlcp::python
