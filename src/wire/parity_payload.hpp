// A parity packet's payload: the XOR of its group's encoded payloads, each padded with zeros to
// a full packet (protocol/parity_groups.hpp). XOR of encoded bytes, not of values, so a payload
// rebuilt from the parity decodes to exactly what the lost packet carried, in any wire dtype.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "dlcp/options.hpp"

namespace dlcp::wire {

// XORs the encoding of `values` in `dtype` (payload_bytes(dtype, values.size()) bytes) into the
// start of `acc`, which must be at least that long. `scratch` holds the encoding on the way.
void xor_encoded(std::span<const float> values, WireDtype dtype, std::span<std::byte> acc,
                 std::vector<std::byte>& scratch);

// acc ^= bytes, over bytes.size() (<= acc.size()) bytes.
void xor_bytes(std::span<const std::byte> bytes, std::span<std::byte> acc);

}  // namespace dlcp::wire
