#include "wire/parity_payload.hpp"

#include <bit>
#include <cassert>

#include "wire/values.hpp"

namespace dlcp::wire {

void xor_bytes(std::span<const std::byte> bytes, std::span<std::byte> acc) {
  assert(bytes.size() <= acc.size());
  for (std::size_t i = 0; i < bytes.size(); ++i) acc[i] ^= bytes[i];
}

void xor_encoded(std::span<const float> values, WireDtype dtype, std::span<std::byte> acc,
                 std::vector<std::byte>& scratch) {
  // float32 payloads are the values' own bytes on a little-endian host (as the send path
  // assumes), so they need no copy.
  if (dtype == WireDtype::kFloat32 && std::endian::native == std::endian::little) {
    return xor_bytes(std::as_bytes(values), acc);
  }
  scratch.resize(payload_bytes(dtype, values.size()));
  encode_values(values, dtype, scratch);
  xor_bytes(scratch, acc);
}

}  // namespace dlcp::wire
