#include "collectives/host_layout.hpp"

#include <algorithm>
#include <map>

namespace dlcp::collectives {

HostLayout::HostLayout(std::span<const std::string> host_ids) {
  std::map<std::string, std::size_t, std::less<>> host_by_id;
  for (std::size_t rank = 0; rank < host_ids.size(); ++rank) {
    const auto [it, added] = host_by_id.try_emplace(host_ids[rank], members_.size());
    if (added) members_.emplace_back();
    members_[it->second].push_back(static_cast<int>(rank));
  }
  index();
}

HostLayout HostLayout::flat(int workers) {
  HostLayout layout;
  for (int rank = 0; rank < workers; ++rank) layout.members_.push_back({rank});
  layout.index();
  return layout;
}

void HostLayout::index() {
  std::size_t workers = 0;
  for (const auto& host : members_) workers += host.size();
  host_of_.assign(workers, 0);
  local_index_.assign(workers, 0);
  stripes_ = members_.empty() ? 1 : static_cast<int>(members_[0].size());
  for (std::size_t h = 0; h < members_.size(); ++h) {
    stripes_ = std::min(stripes_, static_cast<int>(members_[h].size()));
    for (std::size_t i = 0; i < members_[h].size(); ++i) {
      const auto rank = static_cast<std::size_t>(members_[h][i]);
      host_of_[rank] = static_cast<int>(h);
      local_index_[rank] = static_cast<int>(i);
    }
  }
}

std::vector<int> HostLayout::stripe_group(int stripe) const {
  std::vector<int> group;
  group.reserve(members_.size());
  for (int h = 0; h < hosts(); ++h) group.push_back(stripe_leader(h, stripe));
  return group;
}

bool HostLayout::hierarchy_pays() const {
  return hosts() > 1 && hosts() < workers();
}

}  // namespace dlcp::collectives
