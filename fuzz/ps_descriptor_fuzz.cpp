// libFuzzer target for the parameter server's descriptors and the server's plan of a collective
// from them (ps_descriptor.hpp, ps_plan.hpp). The input's first byte gives the workers (1 to 8);
// the rest, read as 32-bit words, is each worker's descriptor in turn (a short one is refused).
// An accepted descriptor must encode back to one that decodes to the same value; an accepted
// plan must give every stripe pushers that count every worker once, each in range and ascending.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "collectives/ps_descriptor.hpp"
#include "collectives/ps_plan.hpp"

namespace {

using namespace dlcp::collectives;

void check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::size_t workers = 1 + data[0] % 8;
  const std::size_t word_bytes = sizeof(float);
  std::vector<PsDescriptor> descriptors;
  for (std::size_t w = 0; w < workers; ++w) {
    const std::size_t begin = 1 + w * kPsDescriptorWords * word_bytes;
    const std::size_t available =
        begin < size ? std::min(kPsDescriptorWords, (size - begin) / word_bytes) : 0;
    std::vector<float> words(available);
    if (available > 0) std::memcpy(words.data(), data + begin, available * word_bytes);
    const auto decoded = decode_descriptor(words);
    if (!decoded) {
      check(!decoded.error().empty());
      return 0;
    }
    const PsDescriptorWire again = encode_descriptor(*decoded);
    const auto redecoded = decode_descriptor(again);
    check(redecoded.has_value() && *redecoded == *decoded);
    descriptors.push_back(*decoded);
  }
  const auto plan = plan_ps_collective(descriptors);
  if (!plan) {
    check(!plan.error().reason.empty());
    check(plan.error().worker >= 0 && static_cast<std::size_t>(plan.error().worker) < workers);
    return 0;
  }
  if (plan->common.shutdown) return 0;
  check(plan->stripes.size() == plan->common.stripes);
  for (const PsStripePlan& stripe : plan->stripes) {
    std::uint64_t counted = 0;
    int previous = -1;
    for (const int pusher : stripe.pushers) {
      check(pusher > previous && static_cast<std::size_t>(pusher) < workers);
      previous = pusher;
      const PsDescriptor& d = descriptors[static_cast<std::size_t>(pusher)];
      check(d.shard_floats == stripe.shard_floats && d.segment_floats == stripe.segment_floats);
      counted += d.contributions;
    }
    check(counted == workers);
  }
  return 0;
}
