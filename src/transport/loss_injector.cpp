#include "transport/loss_injector.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "common/invalid_option.hpp"

namespace dlcp {
namespace {

[[noreturn]] void fail(const std::string& field, double value, const char* rule) {
  invalid_option("LossInjectionOptions." + field, rule, value);
}

}  // namespace

bool LossInjectionOptions::enabled() const {
  const auto positive = [](double rate) { return rate > 0.0; };
  return drop_rate > 0.0 || std::any_of(class_drop_rate.begin(), class_drop_rate.end(), positive) ||
         std::any_of(class_mark_rate.begin(), class_mark_rate.end(), positive) ||
         std::any_of(source_drop_rate.begin(), source_drop_rate.end(), positive);
}

void LossInjectionOptions::validate() const {
  if (!(drop_rate >= 0.0 && drop_rate <= 1.0)) fail("drop_rate", drop_rate, "must be in [0, 1]");
  if (!(mean_burst_length >= 1.0) || !std::isfinite(mean_burst_length)) {
    fail("mean_burst_length", mean_burst_length, "must be >= 1 and finite");
  }
  for (std::size_t c = 0; c < class_drop_rate.size(); ++c) {
    // Negative means "use drop_rate"; NaN is refused.
    if (!(class_drop_rate[c] <= 1.0)) {
      fail("class_drop_rate[" + std::to_string(c) + "]", class_drop_rate[c],
           "must be <= 1 (negative = drop_rate)");
    }
    if (!(class_mark_rate[c] >= 0.0 && class_mark_rate[c] <= 1.0)) {
      fail("class_mark_rate[" + std::to_string(c) + "]", class_mark_rate[c], "must be in [0, 1]");
    }
  }
  for (std::size_t r = 0; r < source_drop_rate.size(); ++r) {
    if (!(source_drop_rate[r] <= 1.0)) {
      fail("source_drop_rate[" + std::to_string(r) + "]", source_drop_rate[r],
           "must be <= 1 (negative = not set)");
    }
  }
}

}  // namespace dlcp

namespace dlcp::transport {
namespace {

// Uniform in [0, 1) from the top 53 bits: the same sequence on every platform for a given seed.
double uniform(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

}  // namespace

LossInjector::LossInjector(const LossInjectionConfig& config) : config_(config), rng_(config.seed) {
  config_.validate();
}

double LossInjector::bad_to_good(double burst) {
  return burst <= 1.0 ? 1.0 : 1.0 / burst;
}

double LossInjector::good_to_bad(double rate, double burst) {
  if (rate <= 0.0) return 0.0;
  if (rate >= 1.0) return 1.0;
  return std::min(1.0, rate * bad_to_good(burst) / (1.0 - rate));
}

double LossInjector::rate_for(int priority_class) const {
  const double class_rate = config_.class_drop_rate[static_cast<std::size_t>(priority_class)];
  return class_rate >= 0.0 ? class_rate : config_.drop_rate;
}

namespace {

void check_class(int priority_class) {
  if (priority_class < 0 || priority_class >= kPriorityClasses) {
    throw std::out_of_range("LossInjector: priority class " + std::to_string(priority_class) +
                            " outside 0..7");
  }
}

}  // namespace

bool LossInjector::should_mark(int priority_class) {
  check_class(priority_class);
  const double rate = config_.class_mark_rate[static_cast<std::size_t>(priority_class)];
  if (rate <= 0.0) return false;  // no draw: drop sequences stay those of a run without marks
  return rate >= 1.0 || uniform(rng_) < rate;
}

bool LossInjector::should_drop(int priority_class, int source_rank) {
  check_class(priority_class);
  if (source_rank >= 0 && static_cast<std::size_t>(source_rank) < config_.source_drop_rate.size()) {
    const double source_rate = config_.source_drop_rate[static_cast<std::size_t>(source_rank)];
    if (source_rate >= 0.0) return source_rate >= 1.0 || uniform(rng_) < source_rate;
  }
  const double rate = rate_for(priority_class);
  if (rate <= 0.0) return false;
  if (rate >= 1.0) return true;
  if (config_.mean_burst_length <= 1.0) return uniform(rng_) < rate;  // independent drops

  // Gilbert-Elliott. A long run of loss at a high rate needs bursts of at least rate / (1 - rate)
  // packets (p_good_to_bad would exceed 1 otherwise); the burst is stretched to that so the
  // long-run rate stays drop_rate.
  const double burst = std::max(config_.mean_burst_length, rate / (1.0 - rate));
  Channel& channel = channels_[static_cast<std::size_t>(priority_class)];
  const double u = uniform(rng_);
  if (channel.bad) {
    if (u < bad_to_good(burst)) channel.bad = false;
  } else {
    if (u < good_to_bad(rate, burst)) channel.bad = true;
  }
  return channel.bad;
}

}  // namespace dlcp::transport
