// How collectives cut a buffer: into parts (one per rank or server) and parts into segments,
// every boundary on a multiple of the block size. A block is one packet's worth of floats, the
// unit whose contribution count travels in the packet header, so block boundaries must line up
// at every hop of a collective.
#pragma once

#include <cstddef>

namespace dlcp::collectives {

struct Range {
  std::size_t begin = 0;
  std::size_t size = 0;
  std::size_t end() const { return begin + size; }
  bool operator==(const Range&) const = default;
};

// Blocks in `floats` floats (the last block may be short).
std::size_t blocks_in(std::size_t floats, std::size_t block);

// Part `index` of `parts` contiguous parts of [0, total): whole blocks, as equal as possible, the
// earlier parts taking the extra blocks; trailing parts may be empty when blocks are few.
Range aligned_part(std::size_t total, std::size_t parts, std::size_t block, std::size_t index);

// Floats per segment for segments of about `target` floats: a multiple of `block`, at least one
// block, and large enough that a range of `range_size` needs at most `max_segments` segments.
std::size_t segment_floats(std::size_t target, std::size_t block, std::size_t range_size,
                           std::size_t max_segments);

// Number of segments of `segment` floats in a range of `size` floats (0 for an empty range).
std::size_t segment_count(std::size_t size, std::size_t segment);

// Segment `index` of `range`, relative to the start of the buffer.
Range segment_of(Range range, std::size_t segment, std::size_t index);

}  // namespace dlcp::collectives
