// Helpers shared by the store implementations: counters stored as decimal text, key lists in
// error messages.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dlcp::rendezvous {

// The integer a counter key holds ("" = 0); throws dlcp::Error(kInvalidArgument) naming the key
// when the value is not a decimal integer.
std::int64_t parse_counter(const std::string& key, const std::string& value);

// Adds delta to the counter held in `value` (rewriting it) and returns the new count. Throws
// dlcp::Error(kInvalidArgument) naming the key when value is not a counter or the sum overflows.
std::int64_t add_to_counter(const std::string& key, std::string& value, std::int64_t delta);

// 'key' for error messages: non-printable bytes as \xNN, long keys cut after 128 bytes.
std::string quote_key(const std::string& key);

// "'a', 'b', 'c'" (at most a few keys, then "and N more").
std::string describe_keys(const std::vector<std::string>& keys);

}  // namespace dlcp::rendezvous
