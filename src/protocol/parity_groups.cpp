#include "protocol/parity_groups.hpp"

#include <stdexcept>

namespace dlcp::protocol {

namespace {
constexpr std::uint32_t kNotProtected = ~std::uint32_t{0};
}  // namespace

ParityGroups::ParityGroups(const std::vector<std::uint8_t>& protected_flags,
                           std::uint32_t members) {
  if (members == 0) throw std::invalid_argument("ParityGroups: members must be > 0");
  ordinal_.assign(protected_flags.size(), kNotProtected);
  for (std::uint32_t seq = 0; seq < protected_flags.size(); ++seq) {
    if (protected_flags[seq] == 0) continue;
    ordinal_[seq] = static_cast<std::uint32_t>(protected_seqs_.size());
    protected_seqs_.push_back(seq);
  }
  const auto count = static_cast<std::uint32_t>(protected_seqs_.size());
  groups_ = count / members;
}

std::optional<std::uint32_t> ParityGroups::group_of(std::uint32_t seq) const {
  if (groups_ == 0 || seq >= ordinal_.size() || ordinal_[seq] == kNotProtected) {
    return std::nullopt;
  }
  return ordinal_[seq] % groups_;
}

std::vector<std::uint32_t> ParityGroups::members(std::uint32_t group) const {
  std::vector<std::uint32_t> seqs;
  for (std::size_t j = group; j < protected_seqs_.size(); j += groups_) {
    seqs.push_back(protected_seqs_[j]);
  }
  return seqs;
}

}  // namespace dlcp::protocol
