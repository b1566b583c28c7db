#include "rendezvous/store_value.hpp"

#include <charconv>

#include "dlcp/error.hpp"

namespace dlcp::rendezvous {

std::int64_t parse_counter(const std::string& key, const std::string& value) {
  if (value.empty()) return 0;
  std::int64_t result = 0;
  const auto* end = value.data() + value.size();
  const auto [ptr, ec] = std::from_chars(value.data(), end, result);
  if (ec != std::errc{} || ptr != end) {
    throw Error(ErrorCode::kInvalidArgument, -1,
                "store: key " + quote_key(key) + " holds a value that is not a counter");
  }
  return result;
}

std::int64_t add_to_counter(const std::string& key, std::string& value, std::int64_t delta) {
  std::int64_t result = 0;
  if (__builtin_add_overflow(parse_counter(key, value), delta, &result)) {
    throw Error(ErrorCode::kInvalidArgument, -1,
                "store: adding " + std::to_string(delta) + " to counter " + quote_key(key) + " (" +
                    value + ") overflows a 64-bit integer");
  }
  value = std::to_string(result);
  return result;
}

std::string quote_key(const std::string& key) {
  constexpr std::size_t kShownBytes = 128;
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "'";
  for (std::size_t i = 0; i < key.size() && i < kShownBytes; ++i) {
    const auto byte = static_cast<unsigned char>(key[i]);
    if (byte >= 0x20 && byte < 0x7F && byte != '\\') {
      out += static_cast<char>(byte);
    } else {
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 0xF];
    }
  }
  out += "'";
  if (key.size() > kShownBytes) out += " (" + std::to_string(key.size()) + " bytes)";
  return out;
}

std::string describe_keys(const std::vector<std::string>& keys) {
  constexpr std::size_t kShown = 4;
  std::string out;
  for (std::size_t i = 0; i < keys.size() && i < kShown; ++i) {
    if (i > 0) out += ", ";
    out += quote_key(keys[i]);
  }
  if (keys.size() > kShown) out += " and " + std::to_string(keys.size() - kShown) + " more";
  return out;
}

}  // namespace dlcp::rendezvous
