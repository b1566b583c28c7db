#include "testbed_options.hpp"

#include <string>

#include "common/invalid_option.hpp"

namespace dlcp::testbed {

namespace {

void validate_long_link(const LongLinkOptions& link, const switchconf::PortOptions& port) {
  // NaN fails every range check below: each is written as !(inside).
  if (!(link.one_way_ms >= 0 && link.one_way_ms <= 1000)) {
    invalid_option("LongLinkOptions.one_way_ms", "must be within [0, 1000]", link.one_way_ms);
  }
  if (!(link.rate_bps >= 1e5 && link.rate_bps <= 1e11)) {
    invalid_option("LongLinkOptions.rate_bps", "must be within [1e5, 1e11]", link.rate_bps);
  }
  // A delay is never negative: the jitter may take at most the whole one-way delay.
  if (!(link.jitter_us >= 0 && link.jitter_us <= link.one_way_ms * 1000)) {
    invalid_option(
        "LongLinkOptions.jitter_us",
        "must be within [0, one_way_ms * 1000 = " + option_value(link.one_way_ms * 1000) + "]",
        link.jitter_us);
  }
  if (!(link.random_loss >= 0 && link.random_loss <= 0.5)) {
    invalid_option("LongLinkOptions.random_loss", "must be within [0, 0.5]", link.random_loss);
  }
  if (!(link.burst_loss >= 0 && link.burst_loss <= 0.5)) {
    invalid_option("LongLinkOptions.burst_loss", "must be within [0, 0.5]", link.burst_loss);
  }
  if (!(link.burst_length >= 1 && link.burst_length <= 1e6)) {
    invalid_option("LongLinkOptions.burst_length", "must be within [1, 1e6] frames",
                   link.burst_length);
  }
  // The queue must hold one largest frame (the MTU plus an Ethernet header and VLAN tag).
  const std::size_t largest_frame = static_cast<std::size_t>(port.mtu) + 18;
  if (link.queue_bytes < largest_frame || link.queue_bytes > (std::size_t{1} << 30)) {
    invalid_option("LongLinkOptions.queue_bytes",
                   "must hold one largest frame (" + std::to_string(largest_frame) +
                       " bytes) and be at most 1 GiB",
                   link.queue_bytes);
  }
  if (link.lossless_dscp < -1 || link.lossless_dscp > 63) {
    invalid_option("LongLinkOptions.lossless_dscp", "must be -1 (none) or a DSCP 0..63",
                   link.lossless_dscp);
  }
  if (!(link.spin_us >= 0 && link.spin_us <= 1000)) {
    invalid_option("LongLinkOptions.spin_us", "must be within [0, 1000]", link.spin_us);
  }
}

}  // namespace

void TestbedOptions::validate() const {
  if (prefix.empty() || prefix.size() > 8 ||
      prefix.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789") != std::string::npos) {
    invalid_option("TestbedOptions.prefix", "must be 1-8 lowercase letters or digits", prefix);
  }
  if (hosts < 2 || hosts > 16) invalid_option("TestbedOptions.hosts", "must be 2..16", hosts);
  if (spines < 1 || spines > 4) invalid_option("TestbedOptions.spines", "must be 1..4", spines);
  port.validate();
  if (sites < 1 || sites > 2) invalid_option("TestbedOptions.sites", "must be 1 or 2", sites);
  if (hosts < sites) {
    invalid_option("TestbedOptions.hosts",
                   "must be at least one per site (" + std::to_string(sites) + ")", hosts);
  }
  validate_long_link(long_link, port);
  if (gray.spine < -1 || gray.spine >= spines) {
    invalid_option("TestbedOptions.gray.spine",
                   "must be a spine (0.." + std::to_string(spines - 1) + ") or -1 for none",
                   gray.spine);
  }
  if (!(gray.loss_rate >= 0 && gray.loss_rate <= 0.5)) {
    invalid_option("TestbedOptions.gray.loss_rate", "must be within [0, 0.5]", gray.loss_rate);
  }
  if (!(gray.burst_ms >= 0 && gray.burst_ms <= 10000)) {
    invalid_option("TestbedOptions.gray.burst_ms", "must be within [0, 10000]", gray.burst_ms);
  }
}

}  // namespace dlcp::testbed
