// Hierarchical parameter server: the all-reduce by host (hierarchical_allreduce.cpp) whose network
// stage is a push to the servers and a pull back, run by each stripe's leaders on their hosts'
// sums. Workers that push nothing still send every server their descriptor, so that each server
// knows, collective by collective, whose pushes to expect and what each counts for.
#include <optional>

#include "collectives/collectives.hpp"
#include "collectives/ps_descriptor.hpp"

namespace dlcp::collectives {

CollectiveResult hierarchical_ps_allreduce(const Group& g, const HostLayout& hosts,
                                           std::uint32_t seq, std::uint32_t ps_seq,
                                           std::span<float> values,
                                           const CollectiveOptions& options) {
  const auto stripes = static_cast<std::uint32_t>(hosts.stripes());
  const NetworkAllreduce push_and_pull = [ps_seq, stripes](const Group& leaders, std::uint32_t,
                                                           int stripe, std::span<float> host_sum,
                                                           const CollectiveOptions& o) {
    return ps_allreduce(leaders, ps_seq, host_sum, o,
                        {static_cast<std::uint32_t>(stripe), stripes});
  };
  const int led = hosts.stripe_led_by(g.rank);
  const std::size_t led_size =
      led < 0 ? 0 : hosts.stripe_range(values.size(), g.block_for(options.wire), led).size;
  // The leader of a non-empty stripe pushes it (hierarchical_allreduce runs the network stage
  // when there are several hosts); everyone else only sends descriptors: a worker that leads no
  // stripe, or the leaders of an empty stripe or of a host that is the whole job (where every
  // stripe is finalized locally), naming their stripe and host.
  std::optional<PsAbstention> abstention;
  if (led < 0) {
    abstention.emplace(g, ps_seq, options, PsStripe{kNoStripe, stripes}, 0);
  } else if (led_size == 0 || hosts.hosts() == 1) {
    const auto host_workers =
        static_cast<std::uint16_t>(hosts.host_members(hosts.host_of(g.rank)).size());
    abstention.emplace(g, ps_seq, options, PsStripe{static_cast<std::uint32_t>(led), stripes},
                       host_workers);
  }
  CollectiveResult result = hierarchical_allreduce(g, hosts, seq, values, options, push_and_pull);
  if (abstention) abstention->await();
  return result;
}

}  // namespace dlcp::collectives
