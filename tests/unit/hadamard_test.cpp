// The randomized Hadamard rotation: inverse, orthogonality, agreement with an explicit matrix
// product, determinism, independence of pieces, and how it spreads a lost packet's error.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "collectives/hadamard.hpp"

namespace dlcp::collectives {
namespace {

constexpr std::size_t kBlock = kRotationBlockFloats;
constexpr std::size_t kLongSize = 2 * kBlock + 1000 + 3;

std::vector<float> normals(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

double norm(const float* x, std::size_t n) {
  double sum = 0;
  for (std::size_t i = 0; i < n; ++i) sum += double{x[i]} * double{x[i]};
  return std::sqrt(sum);
}

// The sign rule, restated here so that a change to it (which would make ranks running different
// versions disagree) fails a test: entry i is negated when bit i % 64 of
// splitmix64(splitmix64(seed) ^ (i / 64)) is set.
std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9;
  x = (x ^ (x >> 27)) * 0x94d049bb133111eb;
  return x ^ (x >> 31);
}

double reference_sign(std::uint64_t seed, std::size_t index) {
  const std::uint64_t word = splitmix64(splitmix64(seed) ^ (index / 64));
  return ((word >> (index % 64)) & 1) ? -1.0 : 1.0;
}

// Entry (i, j) of the n x n Walsh-Hadamard matrix (Sylvester order).
double hadamard_entry(std::size_t i, std::size_t j) {
  return (std::popcount(i & j) % 2) ? -1.0 : 1.0;
}

// Row `row` of H * D * x / sqrt(n) for the piece of length n starting at `first`, by the explicit
// O(n) sum over the row (O(n^2) for the whole piece), in double.
double reference_rotated(const std::vector<float>& x, std::size_t first, std::size_t n,
                         std::size_t row, std::uint64_t seed) {
  double sum = 0;
  for (std::size_t j = 0; j < n; ++j) {
    sum += hadamard_entry(row, j) * reference_sign(seed, first + j) * double{x[first + j]};
  }
  return sum / std::sqrt(static_cast<double>(n));
}

TEST(Hadamard, RoundTripRestoresValues) {
  for (const std::size_t size : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{3},
                                 std::size_t{7}, std::size_t{1000}, kBlock, kLongSize}) {
    const std::vector<float> original = normals(size, 7);
    std::vector<float> values = original;
    hadamard_rotate(values, 42);
    hadamard_unrotate(values, 42);
    // Rounding error is relative to a piece's norm, not each entry, so the tolerance scales with
    // the entries' typical size (about 1 here).
    for (std::size_t i = 0; i < size; ++i) {
      EXPECT_NEAR(values[i], original[i], 2e-6 * (1 + std::abs(original[i])))
          << "size " << size << " entry " << i;
    }
  }
}

TEST(Hadamard, RotationPreservesNorm) {
  for (const std::size_t size :
       {std::size_t{1}, std::size_t{3}, std::size_t{7}, std::size_t{1000}, kBlock, kLongSize}) {
    const std::vector<float> original = normals(size, 11);
    std::vector<float> values = original;
    hadamard_rotate(values, 5);
    const double before = norm(original.data(), size);
    EXPECT_NEAR(norm(values.data(), size), before, 1e-6 * before) << size;
    // Each block on its own, too: the rotation is orthogonal piece by piece.
    for (std::size_t b = 0; b + kBlock <= size; b += kBlock) {
      const double block_before = norm(original.data() + b, kBlock);
      EXPECT_NEAR(norm(values.data() + b, kBlock), block_before, 1e-6 * block_before);
    }
  }
}

TEST(Hadamard, FourEntriesMatchTheExplicitMatrix) {
  // Integers, and 1/sqrt(4) = 1/2: every value is exact in float.
  const std::vector<float> x = {1.0f, 2.0f, 3.0f, 5.0f};
  for (const std::uint64_t seed : {0ull, 1ull, 99ull, 0xdeadbeefull}) {
    std::vector<float> y = x;
    hadamard_rotate(y, seed);
    for (std::size_t i = 0; i < 4; ++i) {
      EXPECT_EQ(y[i], static_cast<float>(reference_rotated(x, 0, 4, i, seed))) << seed << " " << i;
    }
    hadamard_unrotate(y, seed);
    EXPECT_EQ(y, x) << seed;
  }
}

TEST(Hadamard, EveryPieceMatchesTheExplicitMatrix) {
  // Pieces: two blocks, then 512, 256, 128, 64, 32, 8 (from 1000) and 2, 1 (from 3).
  const std::vector<float> x = normals(kLongSize, 3);
  const std::uint64_t seed = 1234;
  std::vector<float> y = x;
  hadamard_rotate(y, seed);
  std::size_t first = 0;
  std::size_t pieces = 0;
  while (first < kLongSize) {
    const std::size_t n = std::min(kBlock, std::bit_floor(kLongSize - first));
    // Every row of the small pieces; a spread of rows of the blocks, to keep the test fast.
    const std::size_t step = n > 1024 ? 97 : 1;
    for (std::size_t row = 0; row < n; row += step) {
      EXPECT_NEAR(y[first + row], reference_rotated(x, first, n, row, seed), 1e-5)
          << "piece at " << first << " of " << n << ", row " << row;
    }
    first += n;
    ++pieces;
  }
  EXPECT_EQ(pieces, 10u);
}

TEST(Hadamard, SameSeedSameOutputOtherSeedOtherOutput) {
  const std::vector<float> x = normals(kLongSize, 13);
  std::vector<float> a = x;
  std::vector<float> b = x;
  std::vector<float> c = x;
  hadamard_rotate(a, 77);
  hadamard_rotate(b, 77);
  hadamard_rotate(c, 78);
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
  std::size_t differing = 0;
  for (std::size_t i = 0; i < kLongSize; ++i) differing += a[i] != c[i];
  EXPECT_GT(differing, kLongSize * 9 / 10);
}

// A lost packet in the rotated space: its run of entries is zeroed. After unrotating, the error is
// spread over the whole block, so no entry is hit as hard as by zeroing the run directly.
TEST(Hadamard, LostRunIsSpreadOverTheBlock) {
  constexpr std::size_t kRun = 512;
  const std::vector<float> x = normals(kBlock, 17);
  // A run on a 512 boundary and one that is not (packets need not be a power of two).
  for (const std::size_t start : {std::size_t{4096}, std::size_t{1000}}) {
    std::vector<float> y = x;
    hadamard_rotate(y, 9);
    double lost_energy = 0;
    for (std::size_t i = start; i < start + kRun; ++i) {
      lost_energy += double{y[i]} * double{y[i]};
      y[i] = 0.0f;
    }
    hadamard_unrotate(y, 9);

    double direct_max = 0;
    for (std::size_t i = start; i < start + kRun; ++i) {
      direct_max = std::max(direct_max, double{std::abs(x[i])});
    }
    double spread_max = 0;
    double spread_energy = 0;
    std::size_t touched = 0;
    for (std::size_t i = 0; i < kBlock; ++i) {
      const double error = double{y[i]} - double{x[i]};
      spread_max = std::max(spread_max, std::abs(error));
      spread_energy += error * error;
      touched += std::abs(error) > 1e-4;
    }
    EXPECT_LE(4 * spread_max, direct_max) << start;
    EXPECT_GT(touched, kBlock * 9 / 10) << start;
    // Orthogonal: the total squared error is what the lost rotated entries held.
    EXPECT_NEAR(spread_energy, lost_energy, 1e-4 * lost_energy) << start;
  }
}

TEST(Hadamard, PiecesAreIndependent) {
  const std::vector<float> x = normals(kLongSize, 19);
  std::vector<float> base = x;
  hadamard_rotate(base, 3);

  // Change the middle block: only the middle block's rotated values change.
  std::vector<float> changed = x;
  for (std::size_t i = kBlock; i < 2 * kBlock; i += 101) changed[i] += 1.0f;
  hadamard_rotate(changed, 3);
  for (std::size_t i = 0; i < kLongSize; ++i) {
    if (i < kBlock || i >= 2 * kBlock) {
      ASSERT_EQ(changed[i], base[i]) << i;
    }
  }
  EXPECT_NE(changed[kBlock], base[kBlock]);

  // Change the 8-entry tail piece (at 2 blocks + 992): the 32-entry piece before it and the
  // 2-entry piece after it keep their values.
  const std::size_t eight = 2 * kBlock + 992;
  changed = x;
  changed[eight + 3] = 100.0f;
  hadamard_rotate(changed, 3);
  for (std::size_t i = 0; i < kLongSize; ++i) {
    if (i < eight || i >= eight + 8) {
      ASSERT_EQ(changed[i], base[i]) << i;
    } else {
      EXPECT_NE(changed[i], base[i]) << i;
    }
  }
}

TEST(Hadamard, EmptySpanIsANoOp) {
  hadamard_rotate({}, 1);
  hadamard_unrotate({}, 1);
}

}  // namespace
}  // namespace dlcp::collectives
