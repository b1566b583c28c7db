// Loss budget arithmetic: fractions to ppm and back, ppm to missing entries, phase schedule; and
// PolicyOptions::validate.
#include <cmath>
#include <sstream>
#include <stdexcept>
#include <string>

#include "common/invalid_option.hpp"
#include "policy/policy.hpp"

namespace dlcp {

namespace {

std::string show(double v) {
  std::ostringstream out;
  out.precision(17);
  out << v;
  return out.str();
}

bool in_unit_interval(double v) {
  return v >= 0.0 && v <= 1.0;
}  // false for NaN

}  // namespace

void PolicyOptions::validate() const {
  dscp.validate();
  if (!in_unit_interval(protected_share)) {
    invalid_option("PolicyOptions.protected_share", "must be within [0, 1]", protected_share);
  }
}

namespace policy {

std::uint32_t budget_ppm(double fraction) {
  if (!in_unit_interval(fraction)) {
    throw std::invalid_argument("budget_ppm: fraction = " + show(fraction) + " is outside [0, 1]");
  }
  return static_cast<std::uint32_t>(std::llround(fraction * kPpm));
}

double budget_fraction(std::uint32_t ppm) {
  if (ppm > kPpm) {
    throw std::invalid_argument("budget_fraction: ppm = " + std::to_string(ppm) +
                                " exceeds 1000000");
  }
  return static_cast<double>(ppm) / kPpm;
}

std::uint64_t allowed_missing_entries(std::uint64_t total_entries, std::uint32_t loss_budget_ppm) {
  if (loss_budget_ppm > kPpm) {
    throw std::invalid_argument("allowed_missing_entries: loss_budget_ppm = " +
                                std::to_string(loss_budget_ppm) + " exceeds 1000000");
  }
  // total = q * 1e6 + r, so floor(total * ppm / 1e6) = q * ppm + floor(r * ppm / 1e6) exactly.
  // q * ppm <= total (ppm <= 1e6) and r * ppm < 1e12: neither overflows.
  const std::uint64_t q = total_entries / kPpm;
  const std::uint64_t r = total_entries % kPpm;
  return q * loss_budget_ppm + r * loss_budget_ppm / kPpm;
}

double PhaseBudget::at_round(std::uint64_t round) const {
  if (!in_unit_interval(budget)) {
    throw std::invalid_argument("PhaseBudget: budget = " + show(budget) + " is outside [0, 1]");
  }
  if (round < warmup_rounds) return 0.0;
  const std::uint64_t progress = round - warmup_rounds;
  if (progress >= ramp_rounds) return budget;  // also ramp_rounds == 0: jump to the full budget
  return budget * (static_cast<double>(progress) / static_cast<double>(ramp_rounds));
}

}  // namespace policy

}  // namespace dlcp
