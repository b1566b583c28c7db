// Big-endian integer access to wire buffers. Every multi-byte header field goes through these
// helpers: values are assembled with explicit shifts, never by casting network bytes to structs,
// so the code is independent of host byte order and alignment.
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

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

// Appends big-endian fields to a byte vector; shared by every encoder of variable-length frames.
class ByteWriter {
 public:
  explicit ByteWriter(std::vector<std::byte>& out) : out_(out) {}

  // grow() must run before out_ is converted to a span: the order in which function arguments
  // are evaluated is unspecified, so it is a separate statement.
  void u8(std::uint8_t v) {
    const std::size_t at = grow(1);
    put_u8(out_, at, v);
  }
  void u16(std::uint16_t v) {
    const std::size_t at = grow(2);
    put_u16(out_, at, v);
  }
  void u32(std::uint32_t v) {
    const std::size_t at = grow(4);
    put_u32(out_, at, v);
  }
  void u64(std::uint64_t v) {
    const std::size_t at = grow(8);
    put_u64(out_, at, v);
  }
  // Reserves n zero bytes (e.g. a length prefix patched later) and returns their offset.
  std::size_t grow(std::size_t n) {
    const std::size_t at = out_.size();
    out_.resize(at + n);
    return at;
  }
  std::vector<std::byte>& bytes() { return out_; }

 private:
  std::vector<std::byte>& out_;
};

}  // namespace dlcp::wire
