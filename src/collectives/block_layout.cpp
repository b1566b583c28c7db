#include "collectives/block_layout.hpp"

#include <algorithm>

namespace dlcp::collectives {

std::size_t blocks_in(std::size_t floats, std::size_t block) {
  return (floats + block - 1) / block;
}

Range aligned_part(std::size_t total, std::size_t parts, std::size_t block, std::size_t index) {
  const std::size_t blocks = blocks_in(total, block);
  const std::size_t base = blocks / parts;
  const std::size_t extra = blocks % parts;
  const std::size_t first_block = index * base + std::min(index, extra);
  const std::size_t block_count = base + (index < extra ? 1 : 0);
  const std::size_t begin = std::min(total, first_block * block);
  const std::size_t end = std::min(total, (first_block + block_count) * block);
  return {begin, end - begin};
}

std::size_t segment_floats(std::size_t target, std::size_t block, std::size_t range_size,
                           std::size_t max_segments) {
  std::size_t segment = std::max<std::size_t>(1, target / block) * block;
  const std::size_t needed = blocks_in(blocks_in(range_size, block), max_segments) * block;
  return std::max(segment, needed);
}

std::size_t segment_count(std::size_t size, std::size_t segment) {
  return (size + segment - 1) / segment;
}

Range segment_of(Range range, std::size_t segment, std::size_t index) {
  const std::size_t begin = range.begin + std::min(range.size, index * segment);
  const std::size_t end = range.begin + std::min(range.size, (index + 1) * segment);
  return {begin, end - begin};
}

}  // namespace dlcp::collectives
