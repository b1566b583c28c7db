#include "collectives/hadamard.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

namespace dlcp::collectives {
namespace {

// Entries transformed together through the low stages (pairs less than this far apart): 8 KiB,
// small enough to stay in the L1 cache through all of them, so that only the few stages pairing
// entries further apart pass over the whole block.
constexpr std::size_t kChunkFloats = 2048;
static_assert(std::has_single_bit(kRotationBlockFloats));
static_assert(std::has_single_bit(kChunkFloats) && kChunkFloats <= kRotationBlockFloats);

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9;
  x = (x ^ (x >> 27)) * 0x94d049bb133111eb;
  return x ^ (x >> 31);
}

// Sign bits come 64 to a hash: entry i's sign is bit i % 64 of sign_word(key, i / 64). One hash
// per 64 entries keeps the hashing a small part of the sign pass. `key` is the seed hashed once,
// so that two seeds' patterns are not the same words at other indices (as they would be for
// seed ^ word).
std::uint64_t sign_word(std::uint64_t key, std::size_t word) {
  return splitmix64(key ^ word);
}

float inverse_sqrt(std::size_t n) {
  return static_cast<float>(1.0 / std::sqrt(static_cast<double>(n)));
}

// values[i] *= -scale where the sign bit of entry first + i is set, else *= scale; i < n.
void apply_signs(float* values, std::size_t first, std::size_t n, std::uint64_t key, float scale) {
  if (n < 4) {
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t index = first + i;
      const bool negative = (sign_word(key, index / 64) >> (index % 64)) & 1;
      values[i] *= negative ? -scale : scale;
    }
    return;
  }
  // Pieces of 4 or more start on a multiple of their length, so runs of 4 never straddle a sign
  // word. The four factors of every nibble of sign bits turn the pass into plain 4-float
  // multiplies rather than a select per entry.
  float factors[16][4];
  for (unsigned nibble = 0; nibble < 16; ++nibble) {
    for (unsigned j = 0; j < 4; ++j) factors[nibble][j] = ((nibble >> j) & 1) ? -scale : scale;
  }
  for (std::size_t i = 0; i < n;) {
    const std::size_t index = first + i;
    std::uint64_t bits = sign_word(key, index / 64) >> (index % 64);
    const std::size_t end = std::min(n, i + 64 - index % 64);
    for (; i < end; i += 4, bits >>= 4) {
      const float* f = factors[bits & 15];
      float* v = values + i;
      for (std::size_t j = 0; j < 4; ++j) v[j] *= f[j];
    }
  }
}

// Butterflies a[i], b[i] -> a[i] + b[i], a[i] - b[i] for i < h, h a multiple of 8. The fixed inner
// 8 lets the compiler vectorize without a remainder loop, which -O2 would not do for a loop of
// unknown count.
void butterflies(float* __restrict a, float* __restrict b, std::size_t h) {
  for (std::size_t i = 0; i < h; i += 8) {
    for (std::size_t k = 0; k < 8; ++k) {
      const float u = a[i + k];
      const float v = b[i + k];
      a[i + k] = u + v;
      b[i + k] = u - v;
    }
  }
}

// Two stages at once, h and 2h: a 4-point transform across the quarters a, b, c, d of each run of
// 4h entries, each quarter h long (a multiple of 8). Loads and stores, not arithmetic, bound the
// speed, and this halves them against doing the two stages one at a time.
void butterflies4(float* __restrict a, float* __restrict b, float* __restrict c,
                  float* __restrict d, std::size_t h) {
  for (std::size_t i = 0; i < h; i += 8) {
    for (std::size_t k = 0; k < 8; ++k) {
      const float p = a[i + k] + b[i + k];
      const float q = a[i + k] - b[i + k];
      const float r = c[i + k] + d[i + k];
      const float s = c[i + k] - d[i + k];
      a[i + k] = p + r;
      b[i + k] = q + s;
      c[i + k] = p - r;
      d[i + k] = q - s;
    }
  }
}

// The stages pairing entries h apart for h in [from, until), over x[0, n); two at a time while
// two are left.
void wide_stages(float* x, std::size_t n, std::size_t from, std::size_t until) {
  std::size_t h = from;
  for (; 4 * h <= until; h *= 4) {
    for (std::size_t j = 0; j < n; j += 4 * h) {
      butterflies4(x + j, x + j + h, x + j + 2 * h, x + j + 3 * h, h);
    }
  }
  if (h < until) {
    for (std::size_t j = 0; j < n; j += 2 * h) butterflies(x + j, x + j + h, h);
  }
}

// The three stages within the run of 8 entries at p (h = 1, 2, 4), done in registers.
inline void transform8(float* p) {
  const float a0 = p[0] + p[1], a1 = p[0] - p[1], a2 = p[2] + p[3], a3 = p[2] - p[3];
  const float a4 = p[4] + p[5], a5 = p[4] - p[5], a6 = p[6] + p[7], a7 = p[6] - p[7];
  const float b0 = a0 + a2, b1 = a1 + a3, b2 = a0 - a2, b3 = a1 - a3;
  const float b4 = a4 + a6, b5 = a5 + a7, b6 = a4 - a6, b7 = a5 - a7;
  p[0] = b0 + b4;
  p[1] = b1 + b5;
  p[2] = b2 + b6;
  p[3] = b3 + b7;
  p[4] = b0 - b4;
  p[5] = b1 - b5;
  p[6] = b2 - b6;
  p[7] = b3 - b7;
}

// The stages h = 1, 2, 4 over x[0, n), n a multiple of 8. Four runs per step of the main loop, so
// that the compiler vectorizes across runs (a lane per run): within one run these stages pair
// neighbours inside one vector, which it would leave scalar.
void narrow_stages(float* x, std::size_t n) {
  std::size_t j = 0;
  for (; j + 32 <= n; j += 32) {
    for (std::size_t r = 0; r < 4; ++r) transform8(x + j + 8 * r);
  }
  for (; j < n; j += 8) transform8(x + j);
}

// Unnormalized Walsh-Hadamard transform of a piece of fewer than 8 entries.
void small_transform(float* x, std::size_t n) {
  for (std::size_t h = 1; h < n; h *= 2) {
    for (std::size_t j = 0; j < n; j += 2 * h) {
      for (std::size_t i = j; i < j + h; ++i) {
        const float u = x[i];
        const float v = x[i + h];
        x[i] = u + v;
        x[i + h] = u - v;
      }
    }
  }
}

// The stages commute (each is H_2 acting on one bit of the index), so a piece runs the stages
// within each chunk while the chunk is in cache, and the wider ones over the whole piece; the
// inverse runs them in the mirrored order so that the sign pass touches a chunk while it is warm.
// The 1/sqrt(n) scale rides on the sign pass: one multiply per entry.
void rotate_piece(float* x, std::size_t first, std::size_t n, std::uint64_t key) {
  const float scale = inverse_sqrt(n);
  if (n < 8) {
    apply_signs(x, first, n, key, scale);
    small_transform(x, n);
    return;
  }
  const std::size_t chunk = std::min(n, kChunkFloats);
  for (std::size_t c = 0; c < n; c += chunk) {
    apply_signs(x + c, first + c, chunk, key, scale);
    narrow_stages(x + c, chunk);
    wide_stages(x + c, chunk, 8, chunk);
  }
  wide_stages(x, n, chunk, n);
}

void unrotate_piece(float* x, std::size_t first, std::size_t n, std::uint64_t key) {
  const float scale = inverse_sqrt(n);
  if (n < 8) {
    small_transform(x, n);
    apply_signs(x, first, n, key, scale);
    return;
  }
  const std::size_t chunk = std::min(n, kChunkFloats);
  wide_stages(x, n, chunk, n);
  for (std::size_t c = 0; c < n; c += chunk) {
    narrow_stages(x + c, chunk);
    wide_stages(x + c, chunk, 8, chunk);
    apply_signs(x + c, first + c, chunk, key, scale);
  }
}

// Calls piece(data, first index, length) for every piece of the span, in order.
template <class Piece>
void for_each_piece(std::span<float> values, Piece piece) {
  for (std::size_t begin = 0; begin < values.size();) {
    const std::size_t left = values.size() - begin;
    const std::size_t n = std::min(kRotationBlockFloats, std::bit_floor(left));
    piece(values.data() + begin, begin, n);
    begin += n;
  }
}

}  // namespace

void hadamard_rotate(std::span<float> values, std::uint64_t seed) {
  const std::uint64_t key = splitmix64(seed);
  for_each_piece(values, [key](float* x, std::size_t first, std::size_t n) {
    rotate_piece(x, first, n, key);
  });
}

void hadamard_unrotate(std::span<float> values, std::uint64_t seed) {
  const std::uint64_t key = splitmix64(seed);
  for_each_piece(values, [key](float* x, std::size_t first, std::size_t n) {
    unrotate_piece(x, first, n, key);
  });
}

}  // namespace dlcp::collectives
