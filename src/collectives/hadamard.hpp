// Randomized Hadamard rotation of a buffer, applied before a lossy all-reduce and undone after it.
// A lost packet zeroes a contiguous run of entries, or averages it over fewer ranks than the rest.
// Done in the rotated space, that damage lands on rotated coordinates, each a signed mix of a
// whole piece; unrotating spreads it thinly over every entry of the piece instead of wiping out a
// few parameters. The rotation is orthogonal, so the total squared error is unchanged (only its
// shape is), and linear, so the sum of rotated buffers is the rotation of the sum as long as every
// rank uses the same seed.
//
// Pieces: the span is cut into consecutive blocks of kRotationBlockFloats from its start, and the
// tail (shorter than a block) greedily into decreasing powers of two, so every piece is a power of
// two long and starts on a multiple of its own length. A piece x of n entries becomes
// H * D * x / sqrt(n): D a diagonal of random +-1 signs, a function of the seed and each entry's
// index in the whole span only (every rank computes the same rotation for the same seed and
// length), and H the n x n Walsh-Hadamard matrix. Small tail pieces mix little; a 1-entry piece
// only has its sign flipped or not.
//
// Cost: in place, no allocation; per piece a fast Walsh-Hadamard transform, log2(n) stages of adds
// and subtracts (O(n log n)), plus one pass that applies the signs and the 1/sqrt(n) scale
// together (one multiply per entry). Rounding error is relative to the piece's norm, not to each
// entry: an entry much smaller than its neighbours comes back with their absolute error. Likewise a
// NaN or infinity anywhere in a piece spreads to the whole piece.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace dlcp::collectives {

// Floats per rotation block: the unit within which entries are mixed. A power of two.
inline constexpr std::size_t kRotationBlockFloats = std::size_t{1} << 14;

// Rotates `values` in place, piece by piece: x -> H * D * x / sqrt(n).
void hadamard_rotate(std::span<float> values, std::uint64_t seed);

// The inverse of hadamard_rotate with the same seed, up to float rounding: y -> D * H * y / sqrt(n)
// piece by piece (H is symmetric with H * H = n * I, and D * D = I).
void hadamard_unrotate(std::span<float> values, std::uint64_t seed);

}  // namespace dlcp::collectives
