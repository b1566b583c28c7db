#include "gray_failure.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

namespace dlcp::testbed {

namespace {

constexpr std::uint32_t kPpm = 1'000'000;

std::string dscp_set(const switchconf::SwitchPlan& plan, int traffic_class) {
  std::vector<int> dscps;
  for (const auto& queue : plan.queues) {
    if (queue.traffic_class != traffic_class) continue;
    dscps.insert(dscps.end(), queue.dscps.begin(), queue.dscps.end());
  }
  std::sort(dscps.begin(), dscps.end());
  std::string set;
  for (const int dscp : dscps) set += (set.empty() ? "" : ", ") + std::to_string(dscp);
  return "{ " + set + " }";
}

}  // namespace

std::uint32_t gray_drop_ppm(const GrayFailure& gray) {
  if (gray.burst_ms > 0) return kPpm / 2;
  return static_cast<std::uint32_t>(std::llround(gray.loss_rate * kPpm));
}

std::string gray_failure_ruleset(const switchconf::SwitchPlan& plan, const GrayFailure& gray) {
  std::ostringstream out;
  out << "table bridge " << kGrayTable << " {\n";
  out << "  chain loss {\n";
  for (int c = 0; c < switchconf::kTrafficClasses; ++c) {
    out << "    ip dscp " << dscp_set(plan, c) << " numgen random mod " << kPpm << " < "
        << gray_drop_ppm(gray) << " counter drop comment \"drop " << c << "\"\n";
  }
  out << "  }\n";
  out << "  chain gate {\n";
  if (gray.burst_ms == 0 && gray.loss_rate > 0) out << "    jump loss\n";
  out << "  }\n";
  out << "  chain forward {\n";
  out << "    type filter hook forward priority 0; policy accept;\n";
  for (int c = 0; c < switchconf::kTrafficClasses; ++c) {
    out << "    ip dscp " << dscp_set(plan, c) << " counter comment \"seen " << c << "\"\n";
  }
  out << "    jump gate\n";
  out << "  }\n";
  out << "}\n";
  return out.str();
}

ClassLoss parse_gray_counters(const std::string& nft_json) {
  ClassLoss loss;
  const auto doc = nlohmann::json::parse(nft_json);
  for (const auto& item : doc.at("nftables")) {
    if (!item.contains("rule")) continue;
    const auto& rule = item["rule"];
    if (!rule.contains("comment")) continue;
    std::istringstream comment(rule["comment"].get<std::string>());
    std::string kind;
    int traffic_class = -1;
    comment >> kind >> traffic_class;
    if (traffic_class < 0 || traffic_class >= switchconf::kTrafficClasses) continue;
    std::uint64_t packets = 0;
    for (const auto& expr : rule.at("expr")) {
      if (expr.contains("counter")) packets = expr["counter"].at("packets").get<std::uint64_t>();
    }
    const auto c = static_cast<std::size_t>(traffic_class);
    if (kind == "seen") loss.seen[c] = packets;
    if (kind == "drop") loss.dropped[c] = packets;
  }
  return loss;
}

BurstSchedule::BurstSchedule(const GrayFailure& gray)
    : mean_good_ms_(gray.loss_rate > 0 ? gray.burst_ms * (0.5 / gray.loss_rate - 1) : 0),
      mean_bad_ms_(gray.burst_ms),
      random_(gray.seed) {}

double BurstSchedule::next_period_ms(bool bad) {
  const double mean = bad ? mean_bad_ms_ : mean_good_ms_;
  if (mean <= 0) return 0;
  return std::exponential_distribution<double>(1.0 / mean)(random_);
}

BurstDriver::BurstDriver(CommandRunner& runner, std::string spine_namespace,
                         const GrayFailure& gray)
    : runner_(runner), namespace_(std::move(spine_namespace)) {
  if (gray.burst_ms <= 0 || gray.loss_rate <= 0) return;
  thread_ = std::thread([this, gray] {
    BurstSchedule schedule(gray);
    bool bad = false;
    while (!stop_) {
      const double period = schedule.next_period_ms(bad);
      const auto until = std::chrono::steady_clock::now() +
                         std::chrono::microseconds(static_cast<std::int64_t>(period * 1000));
      while (!stop_ && std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
            until - std::chrono::steady_clock::now(), std::chrono::milliseconds(50)));
      }
      if (stop_) break;
      bad = !bad;
      set_gate(bad);
    }
    set_gate(false);
  });
}

BurstDriver::~BurstDriver() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void BurstDriver::set_gate(bool open) {
  // A failure here (the testbed was torn down under us) only ends the bursts.
  const std::string command = open
                                  ? std::string("add rule bridge ") + kGrayTable + " gate jump loss"
                                  : std::string("flush chain bridge ") + kGrayTable + " gate";
  runner_.run({"ip", "netns", "exec", namespace_, "nft", command});
}

}  // namespace dlcp::testbed
