#include "protocol/message_sender.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "wire/data_header.hpp"

namespace dlcp::protocol {

std::vector<std::uint8_t> protected_bitmap(const std::vector<std::uint8_t>& protected_flags) {
  std::vector<std::uint8_t> bitmap((protected_flags.size() + 7) / 8, 0);
  for (std::size_t seq = 0; seq < protected_flags.size(); ++seq) {
    if (protected_flags[seq]) bitmap[seq / 8] |= static_cast<std::uint8_t>(1u << (seq % 8));
  }
  return bitmap;
}

MessageSender::MessageSender(std::uint32_t total_floats, std::uint16_t stride_floats,
                             policy::PacketRanking ranking, std::uint8_t parity_members)
    : total_floats_(total_floats), stride_(stride_floats), parity_members_(parity_members) {
  if (total_floats == 0 || stride_floats == 0) {
    throw std::invalid_argument("MessageSender: total and stride must be > 0");
  }
  packet_count_ = wire::packet_count(total_floats, stride_floats);
  if (ranking.protected_flags.empty()) {
    protected_.assign(packet_count_, 1);
    pending_.resize(packet_count_);
    for (std::uint32_t seq = 0; seq < packet_count_; ++seq) pending_[seq] = seq;
  } else {
    if (ranking.protected_flags.size() != packet_count_ ||
        ranking.send_order.size() != packet_count_) {
      throw std::invalid_argument("MessageSender: a ranking of " +
                                  std::to_string(ranking.protected_flags.size()) +
                                  " packets for a message of " + std::to_string(packet_count_));
    }
    protected_ = std::move(ranking.protected_flags);
    pending_ = std::move(ranking.send_order);
  }
  protected_count_ =
      static_cast<std::uint32_t>(std::count(protected_.begin(), protected_.end(), 1));
  if (parity_members_ > 0 && protected_count_ >= parity_members_) {
    parity_.emplace(protected_, parity_members_);
    // The first round sends protected packets first: the parity packets go right after them,
    // before the drop-eligible tail, so that they arrive before the round's end is reported.
    std::vector<std::uint32_t> parity_seqs(parity_->group_count());
    for (std::uint32_t g = 0; g < parity_->group_count(); ++g) parity_seqs[g] = packet_count_ + g;
    const auto after_protected = std::find_if(
        pending_.begin(), pending_.end(), [&](std::uint32_t seq) { return protected_[seq] == 0; });
    pending_.insert(after_protected, parity_seqs.begin(), parity_seqs.end());
  }
}

std::uint32_t MessageSender::floats_in(std::uint32_t seq) const {
  if (is_parity(seq)) return stride_;
  return wire::packet_floats(total_floats_, stride_, seq);
}

wire::FlowStart MessageSender::flow_start(std::uint64_t message_id, std::uint8_t priority_class,
                                          std::uint32_t budget_ppm) const {
  wire::FlowStart flow;
  flow.message_id = message_id;
  flow.total_floats = total_floats_;
  flow.stride_floats = stride_;
  flow.priority_class = priority_class;
  flow.parity_members = parity_ ? parity_members_ : 0;
  flow.loss_budget_ppm = budget_ppm;
  flow.packet_count = packet_count_;
  flow.protected_count = protected_count_;
  flow.protected_bitmap = protected_bitmap(protected_);
  return flow;
}

MessageSender::ReportEffect MessageSender::on_missing_ranges(
    std::uint16_t report_round, const std::vector<wire::SeqRange>& ranges) {
  for (const auto& range : ranges) {
    if (std::uint64_t{range.first} + range.count > packet_count_) return ReportEffect::kInvalid;
  }
  // A report answers the end of a round: one for another round, or arriving while this round is
  // still going out, is a repeat (the simulator's control packets can be duplicated by retries).
  if (report_round != round_ || has_next()) return ReportEffect::kIgnored;
  std::vector<std::uint32_t> first;
  std::vector<std::uint32_t> rest;
  for (const auto& range : ranges) {
    for (std::uint32_t seq = range.first; seq < range.first + range.count; ++seq) {
      (protected_[seq] ? first : rest).push_back(seq);
    }
  }
  if (first.empty() && rest.empty()) return ReportEffect::kIgnored;
  // Protected packets are retransmitted first.
  first.insert(first.end(), rest.begin(), rest.end());
  pending_ = std::move(first);
  next_ = 0;
  ++round_;
  return ReportEffect::kNewRound;
}

}  // namespace dlcp::protocol
