// A message as both ends name it: the peer on the other end and the id the caller chose.
#pragma once

#include <cstdint>
#include <functional>

namespace dlcp::protocol {

struct MessageKey {
  int peer = 0;
  std::uint64_t id = 0;
  bool operator==(const MessageKey&) const = default;
};

struct MessageKeyHash {
  std::size_t operator()(const MessageKey& key) const {
    return std::hash<std::uint64_t>{}(key.id * 0x9E3779B97F4A7C15ull ^
                                      static_cast<std::uint64_t>(key.peer));
  }
};

}  // namespace dlcp::protocol
