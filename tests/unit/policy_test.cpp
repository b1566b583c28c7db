// Unit tests for src/policy: DSCP table, TOS bytes, priority classes, drop precedence, loss budget.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "dlcp/error.hpp"
#include "policy/policy.hpp"

namespace dlcp::policy {
namespace {

// Runs fn, expects std::invalid_argument (the policy functions' refusal), and returns its message.
template <typename Fn>
std::string invalid_argument_message(Fn&& fn) {
  try {
    fn();
  } catch (const std::invalid_argument& e) {
    return e.what();
  } catch (...) {
    ADD_FAILURE() << "threw something other than std::invalid_argument";
    return {};
  }
  ADD_FAILURE() << "did not throw";
  return {};
}

// Runs fn, expects dlcp::Error(kInvalidArgument) (an options struct's validate()), and returns
// its message.
template <typename Fn>
std::string invalid_option_message(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    EXPECT_EQ(e.peer(), -1) << e.what();
    return e.what();
  } catch (...) {
    ADD_FAILURE() << "threw something other than dlcp::Error";
    return {};
  }
  ADD_FAILURE() << "did not throw";
  return {};
}

#define EXPECT_MESSAGE_HAS(message_of, expr, ...)                        \
  do {                                                                   \
    const std::string message_ = message_of([&] { (void)(expr); });      \
    for (const char* part_ : {__VA_ARGS__}) {                            \
      EXPECT_NE(message_.find(part_), std::string::npos)                 \
          << "message \"" << message_ << "\" lacks \"" << part_ << "\""; \
    }                                                                    \
  } while (0)
#define EXPECT_INVALID(expr, ...) EXPECT_MESSAGE_HAS(invalid_argument_message, expr, __VA_ARGS__)
#define EXPECT_INVALID_OPTION(expr, ...) \
  EXPECT_MESSAGE_HAS(invalid_option_message, expr, __VA_ARGS__)

// ---------------------------------------------------------------- DSCP table

TEST(DscpTable, DefaultsForAllClasses) {
  const DscpTable t = DscpTable::defaults();
  const std::uint8_t protected_expected[8] = {58, 50, 42, 34, 26, 18, 10, 2};
  const std::uint8_t drop_expected[8] = {62, 54, 46, 38, 30, 22, 14, 6};
  for (int c = 0; c < kPriorityClasses; ++c) {
    EXPECT_EQ(t.protected_dscp[c], protected_expected[c]) << "class " << c;
    EXPECT_EQ(t.drop_eligible_dscp[c], drop_expected[c]) << "class " << c;
    EXPECT_EQ(t.protected_dscp[c] >> 3, 7 - c) << "class selector of class " << c;
    EXPECT_EQ(t.protected_dscp[c] & 0b111, 0b010);
    EXPECT_EQ(t.drop_eligible_dscp[c] & 0b111, 0b110);
  }
  EXPECT_EQ(t.control_dscp, 63);
  EXPECT_TRUE(t.protected_ect);
  EXPECT_NO_THROW(t.validate());
}

TEST(DscpTable, PolicyOptionsDefaultToDefaultTable) {
  const PolicyConfig config;
  EXPECT_EQ(config.dscp.protected_dscp, DscpTable::defaults().protected_dscp);
  EXPECT_EQ(config.dscp.drop_eligible_dscp, DscpTable::defaults().drop_eligible_dscp);
  EXPECT_DOUBLE_EQ(config.protected_share, 0.5);
  EXPECT_NO_THROW(config.validate());
}

TEST(DscpTable, ControlAboveAllData) {
  const DscpTable t = DscpTable::defaults();
  const PolicyConfig config;
  for (int c = 0; c < kPriorityClasses; ++c) {
    EXPECT_GT(t.control_dscp, t.protected_dscp[c]);
    EXPECT_GT(t.control_dscp, t.drop_eligible_dscp[c]);
    EXPECT_GT(control_tos(config), data_tos(config, c, Precedence::kProtected));
    EXPECT_GT(control_tos(config), data_tos(config, c, Precedence::kDropEligible));
  }
}

TEST(DscpTable, FrontClassesAreMoreUrgent) {
  const DscpTable t = DscpTable::defaults();
  for (int c = 0; c + 1 < kPriorityClasses; ++c) {
    EXPECT_GT(t.protected_dscp[c] >> 3, t.protected_dscp[c + 1] >> 3);
    EXPECT_GT(t.drop_eligible_dscp[c] >> 3, t.drop_eligible_dscp[c + 1] >> 3);
  }
}

TEST(DscpTable, RejectsCodepointAbove63) {
  DscpTable t = DscpTable::defaults();
  t.protected_dscp[3] = 64;
  EXPECT_INVALID_OPTION(t.validate(), "DscpTable.protected_dscp[3] must be <= 63, got 64");

  t = DscpTable::defaults();
  t.drop_eligible_dscp[7] = 200;
  EXPECT_INVALID_OPTION(t.validate(), "drop_eligible_dscp[7]", "200");

  t = DscpTable::defaults();
  t.control_dscp = 64;
  EXPECT_INVALID_OPTION(t.validate(), "control_dscp", "64");
}

TEST(DscpTable, RejectsCollidingDataSlots) {
  DscpTable t = DscpTable::defaults();
  t.drop_eligible_dscp[2] = t.protected_dscp[5];  // 18
  EXPECT_INVALID_OPTION(
      t.validate(), "DscpTable.drop_eligible_dscp[2] must differ from protected_dscp[5], got 18");

  t = DscpTable::defaults();
  t.protected_dscp[6] = t.protected_dscp[1];  // 50
  EXPECT_INVALID_OPTION(t.validate(), "protected_dscp[6]", "protected_dscp[1]", "50");

  t = DscpTable::defaults();
  t.drop_eligible_dscp[4] = t.drop_eligible_dscp[0];  // 62
  EXPECT_INVALID_OPTION(t.validate(), "drop_eligible_dscp[4]", "drop_eligible_dscp[0]", "62");

  // An all-zero table (the struct's value-initialised state) is not a valid table.
  DscpTable zero;
  zero.protected_dscp = {};
  zero.drop_eligible_dscp = {};
  EXPECT_INVALID_OPTION(zero.validate(), "must differ from");
}

TEST(DscpTable, RejectsControlCollidingWithData) {
  DscpTable t = DscpTable::defaults();
  t.control_dscp = t.drop_eligible_dscp[0];  // 62
  EXPECT_INVALID_OPTION(t.validate(), "control_dscp", "62", "drop_eligible_dscp[0]");
}

TEST(DscpTable, AcceptsACustomTable) {
  DscpTable t;
  for (int c = 0; c < kPriorityClasses; ++c) {
    t.protected_dscp[c] = static_cast<std::uint8_t>(2 * c);
    t.drop_eligible_dscp[c] = static_cast<std::uint8_t>(2 * c + 1);
  }
  t.control_dscp = 48;  // need not be above data, only distinct
  t.protected_ect = false;
  EXPECT_NO_THROW(t.validate());
}

TEST(PolicyOptions, ValidatesShareAndTable) {
  PolicyConfig config;
  config.protected_share = 0.0;
  EXPECT_NO_THROW(config.validate());
  config.protected_share = 1.0;
  EXPECT_NO_THROW(config.validate());
  config.protected_share = 1.5;
  EXPECT_INVALID_OPTION(config.validate(),
                        "PolicyOptions.protected_share must be within [0, 1], got 1.5");
  config.protected_share = -0.25;
  EXPECT_INVALID_OPTION(config.validate(), "protected_share", "-0.25");
  config.protected_share = std::numeric_limits<double>::quiet_NaN();
  EXPECT_INVALID_OPTION(config.validate(), "protected_share", "nan");

  config.protected_share = 0.5;
  config.dscp.protected_dscp[0] = 99;
  EXPECT_INVALID_OPTION(config.validate(), "protected_dscp[0]", "99");
}

// ---------------------------------------------------------------- TOS bytes

TEST(Tos, DataTosCarriesDscpAndEcn) {
  const PolicyConfig config;
  for (int c = 0; c < kPriorityClasses; ++c) {
    const std::uint8_t p = data_tos(config, c, Precedence::kProtected);
    const std::uint8_t d = data_tos(config, c, Precedence::kDropEligible);
    EXPECT_EQ(p, static_cast<std::uint8_t>(config.dscp.protected_dscp[c] << 2 | kEcnEct0));
    EXPECT_EQ(d, static_cast<std::uint8_t>(config.dscp.drop_eligible_dscp[c] << 2 | kEcnNotEct));
    EXPECT_EQ(p & 0b11, kEcnEct0);
    EXPECT_EQ(d & 0b11, kEcnNotEct);
  }
  EXPECT_EQ(data_tos(config, 0, Precedence::kProtected), 0xEA);     // 58 << 2 | 0b10
  EXPECT_EQ(data_tos(config, 0, Precedence::kDropEligible), 0xF8);  // 62 << 2
  EXPECT_EQ(data_tos(config, 7, Precedence::kProtected), 0x0A);     // 2 << 2 | 0b10
  EXPECT_EQ(data_tos(config, 7, Precedence::kDropEligible), 0x18);  // 6 << 2
}

TEST(Tos, ProtectedWithoutEct) {
  PolicyConfig config;
  config.dscp.protected_ect = false;
  for (int c = 0; c < kPriorityClasses; ++c) {
    EXPECT_EQ(data_tos(config, c, Precedence::kProtected) & 0b11, kEcnNotEct);
    EXPECT_EQ(data_tos(config, c, Precedence::kProtected) >> 2, config.dscp.protected_dscp[c]);
  }
}

TEST(Tos, ControlTos) {
  const PolicyConfig config;
  EXPECT_EQ(control_tos(config), 0xFC);  // 63 << 2, not ECT
  PolicyConfig custom;
  custom.dscp.control_dscp = 48;
  EXPECT_EQ(control_tos(custom), 0xC0);
}

TEST(Tos, RejectsBadClass) {
  const PolicyConfig config;
  EXPECT_INVALID(data_tos(config, -1, Precedence::kProtected), "priority_class", "-1");
  EXPECT_INVALID(data_tos(config, 8, Precedence::kDropEligible), "priority_class", "8");
}

TEST(Tos, ClassOfDscpIsTheInverse) {
  const PolicyConfig config;
  for (int c = 0; c < kPriorityClasses; ++c) {
    for (Precedence p : {Precedence::kProtected, Precedence::kDropEligible}) {
      const std::uint8_t tos = data_tos(config, c, p);
      EXPECT_EQ(class_of_dscp(config.dscp, static_cast<std::uint8_t>(tos >> 2)), c);
    }
  }
  int data_codepoints = 0;
  for (int dscp = 0; dscp < 256; ++dscp) {
    if (class_of_dscp(config.dscp, static_cast<std::uint8_t>(dscp)) >= 0) ++data_codepoints;
  }
  EXPECT_EQ(data_codepoints, 16);
  EXPECT_EQ(class_of_dscp(config.dscp, 63), -1);  // control is not data
  EXPECT_EQ(class_of_dscp(config.dscp, 0), -1);
  EXPECT_EQ(class_of_dscp(config.dscp, 56), -1);  // plain CS7 is not in the default table
  EXPECT_EQ(class_of_dscp(config.dscp, 255), -1);
}

// ---------------------------------------------------------------- priority classes

void CheckMapping(int num_layers) {
  SCOPED_TRACE("num_layers = " + std::to_string(num_layers));
  std::vector<int> classes;
  for (int layer = 0; layer < num_layers; ++layer) {
    classes.push_back(priority_class(layer, num_layers));
  }
  EXPECT_EQ(classes.front(), 0);
  if (num_layers >= 2) {
    EXPECT_EQ(classes.back(), 7);
  }
  std::vector<int> per_class(kPriorityClasses, 0);
  for (int layer = 0; layer < num_layers; ++layer) {
    ASSERT_GE(classes[layer], 0);
    ASSERT_LT(classes[layer], kPriorityClasses);
    ++per_class[classes[layer]];
    if (layer > 0) {
      EXPECT_LE(classes[layer - 1], classes[layer]) << "layer " << layer;
    }
  }
  if (num_layers <= kPriorityClasses) {
    // Distinct layers get distinct classes.
    EXPECT_EQ(std::set<int>(classes.begin(), classes.end()).size(),
              static_cast<std::size_t>(num_layers));
  } else {
    // Evenly spread: every class used, sizes differ by at most one.
    for (int c = 0; c < kPriorityClasses; ++c) {
      EXPECT_GE(per_class[c], num_layers / kPriorityClasses) << "class " << c;
      EXPECT_LE(per_class[c], (num_layers + kPriorityClasses - 1) / kPriorityClasses)
          << "class " << c;
    }
  }
}

TEST(PriorityClass, FixedValues) {
  EXPECT_EQ(priority_class(0, 1), 0);
  EXPECT_EQ(priority_class(0, 2), 0);
  EXPECT_EQ(priority_class(1, 2), 7);
  EXPECT_EQ(priority_class(0, 3), 0);
  EXPECT_EQ(priority_class(1, 3), 4);  // round(3.5), halves up
  EXPECT_EQ(priority_class(2, 3), 7);
  for (int layer = 0; layer < 8; ++layer) EXPECT_EQ(priority_class(layer, 8), layer);
  EXPECT_EQ(priority_class(0, 50), 0);
  EXPECT_EQ(priority_class(6, 50), 0);
  EXPECT_EQ(priority_class(7, 50), 1);
  EXPECT_EQ(priority_class(49, 50), 7);
  EXPECT_EQ(priority_class(999, 1000), 7);
  EXPECT_EQ(priority_class(124, 1000), 0);
  EXPECT_EQ(priority_class(125, 1000), 1);
}

TEST(PriorityClass, MappingProperties) {
  for (int num_layers : {1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 16, 17, 50, 1000}) CheckMapping(num_layers);
}

TEST(PriorityClass, HugeLayerCountsDoNotOverflow) {
  const int max = std::numeric_limits<int>::max();
  EXPECT_EQ(priority_class(0, max), 0);
  EXPECT_EQ(priority_class(max - 1, max), 7);
  EXPECT_EQ(priority_class(max / 2, max), 3);
}

TEST(PriorityClass, RejectsBadInputs) {
  EXPECT_INVALID(priority_class(0, 0), "num_layers = 0");
  EXPECT_INVALID(priority_class(0, -3), "num_layers = -3");
  EXPECT_INVALID(priority_class(-1, 4), "layer = -1", "num_layers = 4");
  EXPECT_INVALID(priority_class(4, 4), "layer = 4", "num_layers = 4");
  EXPECT_INVALID(priority_class(1, 1), "layer = 1");
}

// ---------------------------------------------------------------- drop precedence

using Flags = std::vector<std::uint8_t>;

TEST(ProtectedPackets, EmptyInput) {
  EXPECT_TRUE(protected_packets({}, 4, 0.5).empty());
  EXPECT_TRUE(protected_packets({}, 4, 1.0).empty());
}

TEST(ProtectedPackets, PicksLargestMeanMagnitude) {
  // Packets of 2: means 1, 5, 2, 4 (signs do not matter).
  const std::vector<float> v = {1, -1, 5, -5, -2, 2, 4, 4};
  EXPECT_EQ(protected_packets(v, 2, 0.5), (Flags{0, 1, 0, 1}));
  EXPECT_EQ(protected_packets(v, 2, 0.25), (Flags{0, 1, 0, 0}));
  EXPECT_EQ(protected_packets(v, 2, 0.75), (Flags{0, 1, 1, 1}));
}

TEST(ProtectedPackets, MeanNotSum) {
  // Packet 0 has the largest single value but the smallest mean.
  const std::vector<float> v = {9, 0, 0, 0, 3, 3, 3, 3};
  EXPECT_EQ(protected_packets(v, 4, 0.5), (Flags{0, 1}));
}

TEST(ProtectedPackets, TiesGoToLowerSequence) {
  const std::vector<float> v = {1, 3, 3, 3, 1, 3};
  EXPECT_EQ(protected_packets(v, 1, 0.5), (Flags{0, 1, 1, 1, 0, 0}));
  const std::vector<float> equal(10, 2.0f);
  EXPECT_EQ(protected_packets(equal, 1, 0.3), (Flags{1, 1, 1, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(protected_packets(equal, 2, 0.4), (Flags{1, 1, 0, 0, 0}));
}

TEST(ProtectedPackets, NanCountsAsLargest) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> v = {1, 1, 0, nan, 7, 7, -inf, 0};
  EXPECT_EQ(protected_packets(v, 2, 0.25), (Flags{0, 1, 0, 0}));  // NaN above +inf
  EXPECT_EQ(protected_packets(v, 2, 0.5), (Flags{0, 1, 0, 1}));   // then inf
  EXPECT_EQ(protected_packets(v, 2, 0.75), (Flags{0, 1, 1, 1}));
  // Two NaN packets tie: lower sequence first.
  const std::vector<float> w = {nan, 5, nan, 1};
  EXPECT_EQ(protected_packets(w, 1, 0.25), (Flags{1, 0, 0, 0}));
  EXPECT_EQ(protected_packets(w, 1, 0.5), (Flags{1, 0, 1, 0}));
}

TEST(ProtectedPackets, ShareZeroAndOne) {
  const std::vector<float> v = {5, 4, 3, 2, 1};
  EXPECT_EQ(protected_packets(v, 2, 0.0), (Flags{0, 0, 0}));
  EXPECT_EQ(protected_packets(v, 2, 1.0), (Flags{1, 1, 1}));
}

TEST(ProtectedPackets, LastShortPacketUsesItsOwnLength) {
  // Packets: {1, 1, 1} mean 1; {2, 2, 2} mean 2; {3} mean 3 (sum would rank it last).
  const std::vector<float> v = {1, 1, 1, 2, 2, 2, 3};
  EXPECT_EQ(protected_packets(v, 3, 0.3), (Flags{0, 0, 1}));  // ceil(0.9) = 1
  // A stride larger than the tensor gives one packet.
  EXPECT_EQ(protected_packets(v, 100, 0.01), (Flags{1}));
  EXPECT_EQ(protected_packets(v, 100, 0.0), (Flags{0}));
}

TEST(ProtectedPackets, ShareRounding) {
  auto count = [](std::size_t n, double share) {
    const std::vector<float> v(n, 1.0f);
    const Flags f = protected_packets(v, 1, share);
    EXPECT_EQ(f.size(), n);
    std::size_t k = 0;
    for (std::uint8_t x : f) k += x;
    return k;
  };
  EXPECT_EQ(count(3, 0.5), 2u);   // ceil(1.5)
  EXPECT_EQ(count(10, 0.3), 3u);  // 0.3 * 10 = 3.0000000000000004 in binary
  EXPECT_EQ(count(10, 0.7), 7u);
  EXPECT_EQ(count(100, 0.07), 7u);  // 7.000000000000001 in binary
  EXPECT_EQ(count(10, 1.0 - 0.7), 3u);
  EXPECT_EQ(count(10, 0.31), 4u);
  EXPECT_EQ(count(1000, 1e-9), 1u);  // any positive share protects at least one packet
  EXPECT_EQ(count(7, 1.0 / 7.0), 1u);
  EXPECT_EQ(count(49, 3.0 / 7.0), 21u);
  for (std::size_t n = 1; n <= 200; ++n) {
    for (std::size_t k = 0; k <= n; ++k) {
      const double share = static_cast<double>(k) / static_cast<double>(n);
      ASSERT_EQ(count(n, share), k) << "n = " << n << " share = " << share;
    }
  }
}

TEST(ProtectedPackets, RejectsBadArguments) {
  const std::vector<float> v = {1, 2, 3};
  EXPECT_INVALID(protected_packets(v, 0, 0.5), "stride");
  EXPECT_INVALID(protected_packets(v, 1, -0.1), "protected_share");
  EXPECT_INVALID(protected_packets(v, 1, 1.01), "protected_share");
  EXPECT_INVALID(protected_packets(v, 1, std::nan("")), "protected_share");
}

TEST(ProtectedPackets, LargeInputMatchesSortedOrder) {
  // Deterministic pseudo-random magnitudes with many ties; compare with a full stable sort.
  const std::size_t n = 5000, stride = 3;
  std::vector<float> v(n * stride - 1);
  std::uint32_t s = 12345;
  for (float& x : v) {
    s = s * 1664525u + 1013904223u;
    x = static_cast<float>((s >> 24) % 16) - 7.5f;
  }
  const Flags flags = protected_packets(v, stride, 0.37);
  std::vector<std::pair<double, std::size_t>> ranks;
  for (std::size_t i = 0; i < n; ++i) {
    double sum = 0;
    const std::size_t end = std::min(v.size(), (i + 1) * stride);
    for (std::size_t j = i * stride; j < end; ++j) sum += std::fabs(v[j]);
    ranks.emplace_back(-sum / static_cast<double>(end - i * stride), i);
  }
  std::sort(ranks.begin(), ranks.end());
  const std::size_t k = 1850;  // ceil(0.37 * 5000)
  Flags expected(n, 0);
  for (std::size_t i = 0; i < k; ++i) expected[ranks[i].second] = 1;
  EXPECT_EQ(flags, expected);
}

using Order = std::vector<std::uint32_t>;

TEST(RankPackets, SendsProtectedThenEligibleEachBySequence) {
  // Packets of 1: means 3, 1, 9, 4, 2, 8.
  const std::vector<float> v = {3, -1, 9, 4, -2, 8};
  const PacketRanking r = rank_packets(v.data(), v.size(), 1, 0.5);
  EXPECT_EQ(r.protected_flags, (Flags{0, 0, 1, 1, 0, 1}));
  EXPECT_EQ(r.send_order, (Order{2, 3, 5, 0, 1, 4}));
  // Nothing protected, or everything: sequence order.
  EXPECT_EQ(rank_packets(v.data(), v.size(), 1, 0.0).send_order, (Order{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(rank_packets(v.data(), v.size(), 1, 1.0).send_order, (Order{0, 1, 2, 3, 4, 5}));
  EXPECT_TRUE(rank_packets(nullptr, 0, 4, 0.5).send_order.empty());
  EXPECT_INVALID(rank_packets(v.data(), v.size(), 0, 0.5), "stride");
}

TEST(RankPackets, AgreesWithProtectedPackets) {
  std::vector<float> v(3001);
  std::uint32_t s = 99;
  for (float& x : v) {
    s = s * 1664525u + 1013904223u;
    x = static_cast<float>((s >> 20) % 1000) * 1e-3f;
  }
  for (const double share : {0.0, 0.2, 0.5, 0.9, 1.0}) {
    const PacketRanking r = rank_packets(v.data(), v.size(), 7, share);
    EXPECT_EQ(r.protected_flags, protected_packets(v, 7, share));
    Order sorted = r.send_order;
    std::sort(sorted.begin(), sorted.end());
    for (std::uint32_t i = 0; i < sorted.size(); ++i) ASSERT_EQ(sorted[i], i);  // a permutation
  }
}

TEST(RankPackets, LongPacketsAreMeasuredByAnEvenSample) {
  // Two packets of 4096 floats: packet 0 is large only where the sample does not read (its last
  // cache line but one), packet 1 is uniformly medium. The sample reads 8 runs of 16 values at
  // 0, 1/7, ..., 7/7 of the way through (the last run ends the packet).
  constexpr std::size_t kStride = 4096;
  std::vector<float> v(2 * kStride, 0.0f);
  for (std::size_t i = kStride - 32; i < kStride - 16; ++i) v[i] = 1000.0f;
  for (std::size_t i = kStride; i < 2 * kStride; ++i) v[i] = 1.0f;
  EXPECT_EQ(protected_packets(v, kStride, 0.5), (Flags{0, 1}));
  // A value the sample does read counts: packet 0's first value.
  v[0] = 1e6f;
  EXPECT_EQ(protected_packets(v, kStride, 0.5), (Flags{1, 0}));
  // Up to kExactMagnitudeFloats a packet is measured whole.
  std::vector<float> w(2 * kExactMagnitudeFloats, 1.0f);
  w[kExactMagnitudeFloats - 40] = 1000.0f;
  EXPECT_EQ(protected_packets(w, kExactMagnitudeFloats, 0.5), (Flags{1, 0}));
}

// ---------------------------------------------------------------- loss budget

TEST(Budget, PpmRounding) {
  EXPECT_EQ(budget_ppm(0.0), 0u);
  EXPECT_EQ(budget_ppm(1.0), 1'000'000u);
  EXPECT_EQ(budget_ppm(0.01), 10'000u);
  EXPECT_EQ(budget_ppm(0.006), 6'000u);
  EXPECT_EQ(budget_ppm(0.035), 35'000u);
  EXPECT_EQ(budget_ppm(0.1), 100'000u);
  EXPECT_EQ(budget_ppm(0.3), 300'000u);
  EXPECT_EQ(budget_ppm(1e-6), 1u);
  EXPECT_EQ(budget_ppm(0.4e-6), 0u);
  EXPECT_EQ(budget_ppm(0.6e-6), 1u);
  EXPECT_EQ(budget_ppm(1.4e-6), 1u);
  EXPECT_EQ(budget_ppm(1.6e-6), 2u);
  EXPECT_EQ(budget_ppm(0.9999996), 1'000'000u);
  EXPECT_EQ(budget_ppm(0.9999994), 999'999u);
  EXPECT_EQ(budget_ppm(std::ldexp(1.0, -20)), 1u);  // 0.95367... ppm
}

TEST(Budget, PpmRejectsOutOfRange) {
  EXPECT_INVALID(budget_ppm(-0.01), "fraction", "-0.01");
  EXPECT_INVALID(budget_ppm(1.5), "fraction", "1.5");
  EXPECT_INVALID(budget_ppm(std::nan("")), "fraction", "nan");
  EXPECT_INVALID(budget_ppm(std::numeric_limits<double>::infinity()), "fraction", "inf");
}

TEST(Budget, FractionIsThePpmInverse) {
  EXPECT_EQ(budget_fraction(0), 0.0);
  EXPECT_EQ(budget_fraction(1'000'000), 1.0);
  EXPECT_EQ(budget_fraction(500'000), 0.5);
  EXPECT_EQ(budget_fraction(50'000), 0.05);  // the nearest double to 0.05, as 50000 / 1e6 is
  EXPECT_EQ(budget_fraction(1), 1e-6);
  // Every ppm comes back unchanged through the fraction.
  for (std::uint32_t ppm = 0; ppm <= kPpm; ++ppm) {
    ASSERT_EQ(budget_ppm(budget_fraction(ppm)), ppm) << ppm;
  }
  // A fraction comes back to within half a ppm (budget_ppm's rounding).
  for (const double fraction : {0.0, 0.006, 0.035, 0.1, 0.3, 1.0, 0.4e-6, 1.6e-6, 0.9999994}) {
    EXPECT_NEAR(budget_fraction(budget_ppm(fraction)), fraction, 0.5e-6) << fraction;
  }
}

TEST(Budget, FractionRejectsPpmAboveOneMillion) {
  EXPECT_INVALID(budget_fraction(1'000'001), "ppm", "1000001");
  EXPECT_INVALID(budget_fraction(std::numeric_limits<std::uint32_t>::max()), "4294967295");
}

TEST(Budget, AllowedMissingFixedValues) {
  EXPECT_EQ(allowed_missing_entries(0, 500'000), 0u);
  EXPECT_EQ(allowed_missing_entries(1000, 0), 0u);
  EXPECT_EQ(allowed_missing_entries(1000, 1'000'000), 1000u);
  EXPECT_EQ(allowed_missing_entries(1000, 10'000), 10u);
  EXPECT_EQ(allowed_missing_entries(999, 10'000), 9u);  // 9.99 floors
  EXPECT_EQ(allowed_missing_entries(99, 10'000), 0u);
  EXPECT_EQ(allowed_missing_entries(100, 10'000), 1u);
  EXPECT_EQ(allowed_missing_entries(1'000'000, 1), 1u);
  EXPECT_EQ(allowed_missing_entries(999'999, 1), 0u);
  EXPECT_EQ(allowed_missing_entries(25'557'032, 35'000), 894'496u);  // ResNet-50 at 3.5%
}

TEST(Budget, AllowedMissingHugeTotals) {
  const std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
  const std::uint64_t two63 = std::uint64_t{1} << 63;
  EXPECT_EQ(allowed_missing_entries(max, 1'000'000), max);
  EXPECT_EQ(allowed_missing_entries(two63, 1'000'000), two63);
  EXPECT_EQ(allowed_missing_entries(two63, 500'000), two63 / 2);
  EXPECT_EQ(allowed_missing_entries(max, 0), 0u);
  // floor(2^63 * 1 / 1e6) = 9223372036854 (2^63 = 9223372036854775808).
  EXPECT_EQ(allowed_missing_entries(two63, 1), 9'223'372'036'854u);
  // floor(2^63 * 999999 / 1e6) = 2^63 - ceil(2^63 / 1e6) = 9223372036854775808 - 9223372036855.
  EXPECT_EQ(allowed_missing_entries(two63, 999'999), 9'223'362'813'482'738'953u);
  // floor((2^64 - 1) * 123457 / 1e6), checked against a 128-bit reference.
  __extension__ using u128 = unsigned __int128;
  for (std::uint64_t total : {max, max - 1, two63 - 1, two63 + 999'999, max / 3}) {
    for (std::uint32_t ppm : {1u, 7u, 123'457u, 500'000u, 999'999u, 1'000'000u}) {
      const auto reference = static_cast<std::uint64_t>(u128{total} * ppm / 1'000'000u);
      EXPECT_EQ(allowed_missing_entries(total, ppm), reference) << total << " " << ppm;
    }
  }
}

TEST(Budget, AllowedMissingRejectsPpmAboveOneMillion) {
  EXPECT_INVALID(allowed_missing_entries(10, 1'000'001), "loss_budget_ppm", "1000001");
}

TEST(Budget, EqualPacketsMatchCeilRule) {
  // With N packets of s entries, "missing entries <= allowed_missing_entries(N * s, ppm)" admits
  // exactly the packet counts a >= ceil((1 - p) * N), p = ppm / 1e6.
  for (std::uint64_t n = 1; n <= 60; ++n) {
    for (std::uint64_t s : {1u, 3u, 360u, 1024u}) {
      for (std::uint32_t ppm :
           {0u, 1u, 6'000u, 10'000u, 35'000u, 100'000u, 333'333u, 500'000u, 999'999u, 1'000'000u}) {
        const std::uint64_t allowed = allowed_missing_entries(n * s, ppm);
        const std::uint64_t needed = ((kPpm - ppm) * n + kPpm - 1) / kPpm;  // exact ceil
        for (std::uint64_t arrived = 0; arrived <= n; ++arrived) {
          const bool by_entries = (n - arrived) * s <= allowed;
          ASSERT_EQ(by_entries, arrived >= needed)
              << "n=" << n << " s=" << s << " ppm=" << ppm << " arrived=" << arrived;
        }
      }
    }
  }
}

TEST(Budget, PhaseBudgetSchedule) {
  PhaseBudget b{0.04, 10, 4};
  for (std::uint64_t r = 0; r < 10; ++r) EXPECT_EQ(b.at_round(r), 0.0) << "round " << r;
  EXPECT_DOUBLE_EQ(b.at_round(10), 0.0);
  EXPECT_DOUBLE_EQ(b.at_round(11), 0.01);
  EXPECT_DOUBLE_EQ(b.at_round(12), 0.02);
  EXPECT_DOUBLE_EQ(b.at_round(13), 0.03);
  EXPECT_EQ(b.at_round(14), 0.04);
  EXPECT_EQ(b.at_round(1'000'000), 0.04);
  EXPECT_EQ(b.at_round(std::numeric_limits<std::uint64_t>::max()), 0.04);
  double previous = 0.0;
  for (std::uint64_t r = 0; r < 30; ++r) {
    EXPECT_GE(b.at_round(r), previous);
    EXPECT_LE(b.at_round(r), 0.04);
    previous = b.at_round(r);
  }
}

TEST(Budget, PhaseBudgetJumpAndNoWarmup) {
  const PhaseBudget jump{0.1, 5, 0};
  EXPECT_EQ(jump.at_round(4), 0.0);
  EXPECT_EQ(jump.at_round(5), 0.1);
  const PhaseBudget always{0.02, 0, 0};
  EXPECT_EQ(always.at_round(0), 0.02);
  const PhaseBudget ramp_only{0.1, 0, 2};
  EXPECT_EQ(ramp_only.at_round(0), 0.0);
  EXPECT_DOUBLE_EQ(ramp_only.at_round(1), 0.05);
  EXPECT_EQ(ramp_only.at_round(2), 0.1);
  const PhaseBudget defaults;
  EXPECT_EQ(defaults.at_round(0), 0.0);
  EXPECT_EQ(defaults.at_round(100), 0.0);
  const PhaseBudget huge{1.0, std::numeric_limits<std::uint64_t>::max() - 1, 0};
  EXPECT_EQ(huge.at_round(std::numeric_limits<std::uint64_t>::max() - 2), 0.0);
  EXPECT_EQ(huge.at_round(std::numeric_limits<std::uint64_t>::max()), 1.0);
}

TEST(Budget, PhaseBudgetRejectsBadBudget) {
  EXPECT_INVALID((PhaseBudget{1.5, 0, 0}.at_round(0)), "budget", "1.5");
  EXPECT_INVALID((PhaseBudget{-0.1, 0, 0}.at_round(3)), "budget", "-0.1");
  EXPECT_INVALID((PhaseBudget{std::nan(""), 0, 0}.at_round(0)), "budget", "nan");
}

TEST(PolicyEcn, OnlyTheCeCodepointIsAMarkWhateverTheDscp) {
  EXPECT_TRUE(is_ce_marked(0b11));
  EXPECT_TRUE(is_ce_marked(static_cast<std::uint8_t>(46 << 2 | kEcnCe)));
  EXPECT_FALSE(is_ce_marked(static_cast<std::uint8_t>(46 << 2 | kEcnEct0)));
  EXPECT_FALSE(is_ce_marked(static_cast<std::uint8_t>(63 << 2 | kEcnNotEct)));
  EXPECT_FALSE(is_ce_marked(0b01));  // ECT(1)
}

}  // namespace
}  // namespace dlcp::policy
