// Big-endian integer access to wire buffers. Every multi-byte header field goes through these
// helpers: values are assembled with explicit shifts, never by casting network bytes to structs,
// so the code is independent of host byte order and alignment.
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <span>

namespace dlcp::wire {

inline void put_u8(std::span<std::byte> out, std::size_t at, std::uint8_t value) {
  assert(at + 1 <= out.size());
  out[at] = static_cast<std::byte>(value);
}

inline void put_u16(std::span<std::byte> out, std::size_t at, std::uint16_t value) {
  assert(at + 2 <= out.size());
  out[at + 0] = static_cast<std::byte>(value >> 8);
  out[at + 1] = static_cast<std::byte>(value);
}

inline void put_u32(std::span<std::byte> out, std::size_t at, std::uint32_t value) {
  assert(at + 4 <= out.size());
  out[at + 0] = static_cast<std::byte>(value >> 24);
  out[at + 1] = static_cast<std::byte>(value >> 16);
  out[at + 2] = static_cast<std::byte>(value >> 8);
  out[at + 3] = static_cast<std::byte>(value);
}

inline void put_u64(std::span<std::byte> out, std::size_t at, std::uint64_t value) {
  assert(at + 8 <= out.size());
  put_u32(out, at, static_cast<std::uint32_t>(value >> 32));
  put_u32(out, at + 4, static_cast<std::uint32_t>(value));
}

inline std::uint8_t get_u8(std::span<const std::byte> in, std::size_t at) {
  assert(at + 1 <= in.size());
  return std::to_integer<std::uint8_t>(in[at]);
}

inline std::uint16_t get_u16(std::span<const std::byte> in, std::size_t at) {
  assert(at + 2 <= in.size());
  return static_cast<std::uint16_t>((std::to_integer<unsigned>(in[at]) << 8) |
                                    std::to_integer<unsigned>(in[at + 1]));
}

inline std::uint32_t get_u32(std::span<const std::byte> in, std::size_t at) {
  assert(at + 4 <= in.size());
  return (std::to_integer<std::uint32_t>(in[at]) << 24) |
         (std::to_integer<std::uint32_t>(in[at + 1]) << 16) |
         (std::to_integer<std::uint32_t>(in[at + 2]) << 8) |
         std::to_integer<std::uint32_t>(in[at + 3]);
}

inline std::uint64_t get_u64(std::span<const std::byte> in, std::size_t at) {
  assert(at + 8 <= in.size());
  return (std::uint64_t{get_u32(in, at)} << 32) | get_u32(in, at + 4);
}

}  // namespace dlcp::wire
