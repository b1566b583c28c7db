#include <gtest/gtest.h>

#include <map>

#include "dlcp/error.hpp"
#include "workload/iteration_plan.hpp"
#include "workload/model_profile.hpp"
#include "workload/training_emulator.hpp"

namespace dlcp::workload {
namespace {

ModelProfile three_layers() {
  return parse_model(R"({"model": "toy", "layers": [
      {"name": "a", "params": 1000, "macs": 100},
      {"name": "b", "params": 3000, "macs": 300},
      {"name": "c", "params": 2000, "macs": 600}]})",
                     "toy");
}

TEST(ModelProfile, BundledProfilesLoad) {
  for (const char* name : {"resnet50", "vgg16", "bert_base"}) {
    const ModelProfile model = load_model(name);
    EXPECT_GT(model.layers.size(), 10u) << name;
    EXPECT_GT(model.total_params, 20'000'000u) << name;
  }
  // ResNet-50 has 25.6 M parameters.
  EXPECT_NEAR(static_cast<double>(load_model("resnet50").total_params), 25.6e6, 0.1e6);
  EXPECT_THROW(load_model("no-such-model"), std::runtime_error);
  EXPECT_THROW(parse_model(R"({"layers": []})", "empty"), std::runtime_error);
  EXPECT_THROW(parse_model(R"({"layers": [{"name": 1}]})", "bad"), std::runtime_error);
}

TEST(IterationPlan, ComputeSplitsByMacsWithBackwardTwiceForward) {
  PlanOptions options;
  options.gradient_scale = 1;
  options.compute_ms = 30;
  options.bucket_mib = 1;
  const IterationPlan plan = make_iteration_plan(three_layers(), options);
  ASSERT_EQ(plan.layers.size(), 3u);
  EXPECT_NEAR(plan.layers[0].forward_s, 0.010 * 0.1, 1e-12);
  EXPECT_NEAR(plan.layers[2].backward_s, 2 * 0.010 * 0.6, 1e-12);
  EXPECT_NEAR(plan.compute_s, 0.030, 1e-12);
  EXPECT_EQ(plan.total_floats, 6000u);
}

TEST(IterationPlan, BucketsFillInBackwardOrderUpToTheCap) {
  PlanOptions options;
  options.gradient_scale = 1;
  options.bucket_mib = 4500.0 * 4 / (1 << 20);  // 4500 floats
  const IterationPlan plan = make_iteration_plan(three_layers(), options);
  // Backward: c (2000) + b (3000) fill the first bucket past the cap; a starts the second.
  ASSERT_EQ(plan.buckets.size(), 2u);
  EXPECT_EQ(plan.buckets[0].first_layer, 1u);
  EXPECT_EQ(plan.buckets[0].last_layer, 2u);
  EXPECT_EQ(plan.buckets[0].offset, 1000u);
  EXPECT_EQ(plan.buckets[0].floats, 5000u);
  EXPECT_EQ(plan.buckets[1].first_layer, 0u);
  EXPECT_EQ(plan.buckets[1].offset, 0u);
  EXPECT_EQ(plan.buckets[1].floats, 1000u);
  EXPECT_EQ(plan.layers[2].bucket, 0u);
  EXPECT_EQ(plan.layers[0].bucket, 1u);
}

TEST(IterationPlan, ScalesGradientsAndValidates) {
  PlanOptions options;
  options.gradient_scale = 0.5;
  EXPECT_EQ(make_iteration_plan(three_layers(), options).total_floats, 3000u);
  options.gradient_scale = 0;
  EXPECT_THROW(make_iteration_plan(three_layers(), options), Error);
  options = PlanOptions{};
  options.compute_ms = -1;
  EXPECT_THROW(options.validate(), Error);
}

// Virtual time: sleeping moves the clock; a bucket's all-reduce takes a fixed time from its start,
// and wait() moves the clock to its completion.
class VirtualTime final : public TimeSource {
 public:
  Clock::time_point now() override { return now_; }
  void sleep_until(Clock::time_point when) override { now_ = std::max(now_, when); }
  void advance_to(Clock::time_point when) { now_ = std::max(now_, when); }

 private:
  Clock::time_point now_{};
};

class FixedLatencySync final : public GradientSync {
 public:
  FixedLatencySync(VirtualTime& time, double latency_s, double delivered = 1.0)
      : time_(time), latency_(latency_s), delivered_(delivered) {}
  void start(std::size_t b, const Bucket&, std::span<float> values) override {
    done_at_[b] = time_.now() + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(latency_));
    started.push_back(b);
    for (float& v : values) v *= 2;  // "reduced"
  }
  double wait(std::size_t b) override {
    time_.advance_to(done_at_.at(b));
    waited.push_back(b);
    return delivered_;
  }
  std::vector<std::size_t> started;
  std::vector<std::size_t> waited;

 private:
  VirtualTime& time_;
  double latency_;
  double delivered_;
  std::map<std::size_t, Clock::time_point> done_at_;
};

IterationPlan toy_plan() {
  PlanOptions options;
  options.gradient_scale = 1;
  options.compute_ms = 30;                      // forward 10 ms, backward 20 ms
  options.bucket_mib = 1000.0 * 4 / (1 << 20);  // one bucket per layer
  return make_iteration_plan(three_layers(), options);
}

TEST(TrainingEmulator, InstantCommunicationCostsNothing) {
  const IterationPlan plan = toy_plan();
  VirtualTime time;
  FixedLatencySync sync(time, 0.0);
  TrainingEmulator emulator(plan, sync, time);
  const auto records = emulator.run(3);
  ASSERT_EQ(records.size(), 3u);
  for (const auto& r : records) {
    EXPECT_NEAR(r.seconds, 0.030, 1e-9);
    EXPECT_DOUBLE_EQ(r.delivered_fraction, 1.0);
  }
  // Backward releases the last layer's bucket first; forward needs the first layer's first.
  EXPECT_EQ(sync.started[0], 0u);
  EXPECT_EQ(plan.buckets[0].first_layer, 2u);
  EXPECT_EQ(sync.waited[0], 2u);
}

TEST(TrainingEmulator, ExposedCommunicationIsWhatForwardWaitsFor) {
  const IterationPlan plan = toy_plan();
  VirtualTime time;
  FixedLatencySync sync(time, 0.050, 0.9);
  TrainingEmulator emulator(plan, sync, time);
  const auto records = emulator.run(2);
  // Iteration 0 (0-30 ms): forward 10 ms, then backward c (12 ms) starts bucket 0 at 22 ms, b
  // (6 ms) bucket 1 at 28 ms, a (2 ms) bucket 2 at 30 ms; nothing to wait for yet.
  EXPECT_NEAR(records[0].seconds, 0.030, 1e-9);
  // Iteration 1 starts at 30 ms and waits for layer a's bucket until 80 ms; b's (78 ms) and c's
  // (72 ms) are back by the time forward reaches them; 30 ms of compute end it at 110 ms.
  EXPECT_NEAR(records[1].seconds, 0.080, 1e-9);
  EXPECT_NEAR(records[0].delivered_fraction, 0.9, 1e-12);
}

TEST(TrainingEmulator, HooksSeeEveryBucketOnceBeforeAndAfter) {
  const IterationPlan plan = toy_plan();
  VirtualTime time;
  FixedLatencySync sync(time, 0.001);
  int filled = 0;
  int checked = 0;
  EmulatorHooks hooks;
  hooks.fill = [&](int, std::size_t, std::span<float> values) {
    ++filled;
    for (float& v : values) v = 1;
  };
  hooks.check = [&](int, std::size_t, std::span<float> values) {
    ++checked;
    for (const float v : values) EXPECT_EQ(v, 2);
  };
  TrainingEmulator emulator(plan, sync, time, hooks);
  emulator.run(4);
  EXPECT_EQ(filled, 4 * 3);
  EXPECT_EQ(checked, 4 * 3);
}

}  // namespace
}  // namespace dlcp::workload
