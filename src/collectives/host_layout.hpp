// Which workers share a host, and how hierarchical collectives divide a buffer among them.
//
// A host's workers split every buffer into `stripes()` stripes (whole blocks each): the host's
// i-th worker (in rank order) leads stripe i, receives its host's contributions to it, runs the
// network algorithm on it with the i-th workers of the other hosts, and hands the result back to
// its host. With hosts of unequal size there are as many stripes as the smallest host has
// workers; the extra workers of larger hosts lead none and only contribute and receive.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "collectives/block_layout.hpp"

namespace dlcp::collectives {

class HostLayout {
 public:
  // One host id per worker rank (equal ids = one host). Hosts are numbered in the order of their
  // lowest rank, workers within a host in rank order, so every rank computes the same layout.
  explicit HostLayout(std::span<const std::string> host_ids);
  // Every worker its own host: the flat layout.
  static HostLayout flat(int workers);

  int workers() const { return static_cast<int>(host_of_.size()); }
  int hosts() const { return static_cast<int>(members_.size()); }
  int host_of(int rank) const { return host_of_[static_cast<std::size_t>(rank)]; }
  // The rank's position among its host's workers (0 = the lowest rank there).
  int local_index(int rank) const { return local_index_[static_cast<std::size_t>(rank)]; }
  // A host's workers in rank order.
  std::span<const int> host_members(int host) const {
    return members_[static_cast<std::size_t>(host)];
  }
  // Stripes per buffer: the smallest host's number of workers.
  int stripes() const { return stripes_; }
  // The stripe the rank leads, or -1 (a worker beyond the smallest host's count).
  int stripe_led_by(int rank) const {
    return local_index(rank) < stripes_ ? local_index(rank) : -1;
  }
  // The leader of `stripe` on `host`.
  int stripe_leader(int host, int stripe) const {
    return host_members(host)[static_cast<std::size_t>(stripe)];
  }
  // The leaders of `stripe`, one per host, in host order: the network algorithm's group.
  std::vector<int> stripe_group(int stripe) const;
  // What Topology::kAuto chooses: hierarchical when the workers span several hosts and at least
  // one host holds several of them (otherwise there is nothing to reduce locally, or no network).
  bool hierarchy_pays() const;

  // Stripe `stripe` of a buffer of `total` values cut in blocks of `block`.
  Range stripe_range(std::size_t total, std::size_t block, int stripe) const {
    return aligned_part(total, static_cast<std::size_t>(stripes_), block,
                        static_cast<std::size_t>(stripe));
  }

 private:
  HostLayout() = default;
  void index();

  std::vector<std::vector<int>> members_;
  std::vector<int> host_of_;
  std::vector<int> local_index_;
  int stripes_ = 1;
};

}  // namespace dlcp::collectives
