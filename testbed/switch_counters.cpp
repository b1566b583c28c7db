#include "switch_counters.hpp"

#include "testbed.hpp"

namespace dlcp::testbed {

namespace {

using PerClass = SwitchCounters::PerClass;

PerClass minus(const PerClass& a, const PerClass& b) {
  PerClass d{};
  for (std::size_t i = 0; i < d.size(); ++i) d[i] = a[i] >= b[i] ? a[i] - b[i] : 0;
  return d;
}

double rate(std::uint64_t dropped, std::uint64_t delivered) {
  const double offered = static_cast<double>(dropped + delivered);
  return offered > 0 ? static_cast<double>(dropped) / offered : 0.0;
}

}  // namespace

SwitchCounters SwitchCounters::operator-(const SwitchCounters& earlier) const {
  SwitchCounters d;
  d.sent = minus(sent, earlier.sent);
  d.dropped = minus(dropped, earlier.dropped);
  d.eligible_sent = minus(eligible_sent, earlier.eligible_sent);
  d.eligible_dropped = minus(eligible_dropped, earlier.eligible_dropped);
  d.gray_seen = minus(gray_seen, earlier.gray_seen);
  d.gray_dropped = minus(gray_dropped, earlier.gray_dropped);
  return d;
}

SwitchCounters read_switch_counters(const Testbed& testbed) {
  SwitchCounters counters;
  const auto add = [&](const std::vector<QueueStats>& port) {
    for (const QueueStats& queue : port) {
      const auto c = static_cast<std::size_t>(queue.traffic_class);
      (queue.drop_eligible ? counters.eligible_sent : counters.sent)[c] += queue.packets;
      (queue.drop_eligible ? counters.eligible_dropped : counters.dropped)[c] += queue.drops;
    }
  };
  for (int s = 0; s < testbed.options().spines; ++s) {
    for (int h = 0; h < testbed.options().hosts; ++h) add(testbed.port_stats(s, h));
    // Two sites: the ports onto the long link, the bottleneck between them, count too.
    for (int site = 0; site < testbed.options().sites; ++site) {
      add(testbed.long_link_port_stats(s, site));
    }
  }
  const ClassLoss gray = testbed.gray_loss();
  counters.gray_seen = gray.seen;
  counters.gray_dropped = gray.dropped;
  return counters;
}

nlohmann::json counters_json(const SwitchCounters& c) {
  constexpr std::size_t kBestEffort = switchconf::kTrafficClasses - 1;
  std::uint64_t urgent_sent = 0;
  std::uint64_t urgent_dropped = 0;
  std::uint64_t eligible_sent = 0;
  std::uint64_t eligible_dropped = 0;
  std::uint64_t gray_seen = 0;
  std::uint64_t gray_dropped = 0;
  nlohmann::json by_class = nlohmann::json::array();
  for (std::size_t i = 0; i < c.sent.size(); ++i) {
    if (i != kBestEffort) {
      urgent_sent += c.sent[i];
      urgent_dropped += c.dropped[i];
    }
    eligible_sent += c.eligible_sent[i];
    eligible_dropped += c.eligible_dropped[i];
    gray_seen += c.gray_seen[i];
    gray_dropped += c.gray_dropped[i];
    by_class.push_back({{"class", i},
                        {"sent", c.sent[i]},
                        {"dropped", c.dropped[i]},
                        {"eligible_sent", c.eligible_sent[i]},
                        {"eligible_dropped", c.eligible_dropped[i]},
                        {"gray_seen", c.gray_seen[i]},
                        {"gray_dropped", c.gray_dropped[i]}});
  }
  return {
      {"queue_drop_rate",
       {{"protected_classes_0_6", rate(urgent_dropped, urgent_sent)},
        {"drop_eligible", rate(eligible_dropped, eligible_sent)},
        {"best_effort_class_7", rate(c.dropped[kBestEffort], c.sent[kBestEffort])}}},
      {"gray_drop_rate",
       gray_seen > 0 ? static_cast<double>(gray_dropped) / static_cast<double>(gray_seen) : 0.0},
      {"gray_seen", gray_seen},
      {"gray_dropped", gray_dropped},
      {"by_class", by_class}};
}

}  // namespace dlcp::testbed
