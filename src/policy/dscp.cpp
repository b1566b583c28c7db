// DSCP table: defaults, validation, and the TOS bytes of data and control packets.
#include <stdexcept>
#include <string>

#include "common/invalid_option.hpp"
#include "policy/policy.hpp"

namespace dlcp {

namespace {

constexpr std::uint8_t kMaxDscp = 63;
constexpr std::uint8_t kLowDropBits = 0b010;   // AF-style x1 drop precedence
constexpr std::uint8_t kHighDropBits = 0b110;  // AF-style x3 drop precedence

}  // namespace

DscpTable DscpTable::defaults() {
  DscpTable table;
  for (int c = 0; c < kPriorityClasses; ++c) {
    const auto class_selector = static_cast<std::uint8_t>((kPriorityClasses - 1 - c) << 3);
    table.protected_dscp[c] = static_cast<std::uint8_t>(class_selector | kLowDropBits);
    table.drop_eligible_dscp[c] = static_cast<std::uint8_t>(class_selector | kHighDropBits);
  }
  table.control_dscp = kMaxDscp;
  table.protected_ect = true;
  return table;
}

void DscpTable::validate() const {
  // Name every data slot so a message says exactly which one is wrong.
  struct Slot {
    const char* field;
    int cls;
    std::uint8_t dscp;
  };
  std::array<Slot, 2 * kPriorityClasses> slots{};
  for (int c = 0; c < kPriorityClasses; ++c) {
    slots[c] = {"protected_dscp", c, protected_dscp[c]};
    slots[kPriorityClasses + c] = {"drop_eligible_dscp", c, drop_eligible_dscp[c]};
  }
  auto name = [](const Slot& s) {
    return std::string(s.field) + "[" + std::to_string(s.cls) + "]";
  };

  for (const Slot& s : slots) {
    if (s.dscp > kMaxDscp) invalid_option("DscpTable." + name(s), "must be <= 63", s.dscp);
  }
  if (control_dscp > kMaxDscp)
    invalid_option("DscpTable.control_dscp", "must be <= 63", control_dscp);
  for (std::size_t i = 0; i < slots.size(); ++i) {
    for (std::size_t j = i + 1; j < slots.size(); ++j) {
      if (slots[i].dscp == slots[j].dscp) {
        invalid_option("DscpTable." + name(slots[j]), "must differ from " + name(slots[i]),
                       slots[j].dscp);
      }
    }
  }
  for (const Slot& s : slots) {
    if (s.dscp == control_dscp) {
      invalid_option("DscpTable.control_dscp", "must differ from " + name(s), control_dscp);
    }
  }
}

}  // namespace dlcp

namespace dlcp::policy {

std::uint8_t data_tos(const PolicyConfig& config, int priority_class, Precedence precedence) {
  if (priority_class < 0 || priority_class >= kPriorityClasses) {
    throw std::invalid_argument("data_tos: priority_class = " + std::to_string(priority_class) +
                                " is outside [0, " + std::to_string(kPriorityClasses) + ")");
  }
  const auto c = static_cast<std::size_t>(priority_class);
  std::uint8_t dscp = 0;
  std::uint8_t ecn = kEcnNotEct;
  switch (precedence) {
    case Precedence::kProtected:
      dscp = config.dscp.protected_dscp[c];
      if (config.dscp.protected_ect) ecn = kEcnEct0;
      break;
    case Precedence::kDropEligible:
      dscp = config.dscp.drop_eligible_dscp[c];
      break;
    default:
      throw std::invalid_argument(
          "data_tos: precedence = " + std::to_string(static_cast<int>(precedence)) +
          " is not a Precedence");
  }
  if (dscp > kMaxDscp) {
    throw std::invalid_argument("data_tos: DSCP " + std::to_string(dscp) + " of class " +
                                std::to_string(priority_class) + " exceeds 63");
  }
  return static_cast<std::uint8_t>(dscp << 2 | ecn);
}

std::uint8_t control_tos(const PolicyConfig& config) {
  const std::uint8_t dscp = config.dscp.control_dscp;
  if (dscp > kMaxDscp) {
    throw std::invalid_argument("control_tos: control_dscp = " + std::to_string(dscp) +
                                " exceeds 63");
  }
  return static_cast<std::uint8_t>(dscp << 2 | kEcnNotEct);
}

int class_of_dscp(const DscpTable& table, std::uint8_t dscp) {
  if (dscp > kMaxDscp) return -1;
  for (int c = 0; c < kPriorityClasses; ++c) {
    const auto i = static_cast<std::size_t>(c);
    if (table.protected_dscp[i] == dscp || table.drop_eligible_dscp[i] == dscp) return c;
  }
  return -1;
}

}  // namespace dlcp::policy
