// How the Python module's store adapters (a torch c10d::Store, a Python object's methods) report
// a failed store call: one dlcp::Error, kDeadline when the store's message says it timed out,
// else kPeerLost, naming the operation and the keys.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace dlcp::python {

// "a, b, c": the keys of a multi-key call, for its error message.
std::string joined_keys(const std::vector<std::string>& keys);

// Throws the dlcp::Error for `store`'s failed `operation` on `keys` with message `what` (its
// first line is kept).
[[noreturn]] void throw_store_failure(std::string_view store, const char* operation,
                                      const std::string& keys, std::string_view what);

}  // namespace dlcp::python
