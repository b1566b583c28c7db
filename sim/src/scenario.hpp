// Named scenarios: `small` for CI, `scale-16`/`scale-48`/`paper-144` for the scale table,
// `long-link-16`/`long-link-144` for two sites over a long, lossy link.
#pragma once

#include <string>
#include <vector>

#include "config.hpp"

namespace dlcp::sim {

// Raised whenever a change to the simulator alters the results of an unchanged configuration, so
// that --merge never mixes results of two models. 2: hosts mark ECN like switch ports; dlcp's
// receiver counts its quiet period from RoundFinished when no packet has arrived. 3: dlcp's data
// and control packets carry their DSCPs (before, ns-3's SendTo sent them all with TOS 0), and
// ports mark ECN per queue (band) except for PIAS. 4: the library's rate controller cuts dlcp's
// rate in proportion to the CE-marked share instead of to 0.9 x the delivered rate. 5: dlcp is
// paced by the library's token bucket, with its burst, instead of strictly one packet per
// rate-spaced slot; the library's burst follows the feedback interval and is dropped on a cut.
// 6: the library's loss reaction cuts the rate by at most half per report.
// 7: receivers offer each sender an equal share of their link and senders pace at no more (the
// library's offered_share and paced_rate); an application-limited sender regains its starting
// rate on clean reports. 8: a receiver also counts among its senders those part-way through a
// message and heard within two packet gaps at their share (the library's counts_as_sender), not
// only those heard within the last feedback interval. 9: the rate controller judges loss over
// samples of at least 16 packets (the library's loss_sample_packets default), not per report,
// and holds the rate while the open sample reads as congestion. 10: the library's pacer burst is
// an eighth of a feedback interval (was half), at least 2 datagrams (was 4). 11: dlcp's rounds,
// completion rule and missing-range reports are the library's protocol core (src/protocol/):
// the first round sends protected packets first, a report's margin against losing the
// retransmission is min(0.5, 2 x the loss of the host's own packets to that peer) of the deficit,
// capped at the budget (was 1 + 2 x the message's loss, uncapped), duplicates do not count as
// arrivals, and a report lists packet ranges. 12: the simulator drives the library's whole
// protocol endpoint (protocol::Endpoint): a parameter server's pushes of one slice share a budget
// group, rate reports go per peer, acks and FlowStart travel on the control channel, and control
// frames cross a reliable channel per host pair.
constexpr int kModelRevision = 12;

std::vector<std::string> scenario_names();
// Returns false for an unknown name.
bool named_scenario(const std::string& name, ScenarioConfig* scenario);
// Why the long link's settings cannot be simulated (a sentence naming the option), or "".
std::string invalid_long_link(const LongLinkConfig& long_link);
// Why the settings cannot be simulated (a sentence naming the option), or "" when they can.
std::string invalid_setting(const ScenarioConfig& scenario);
// The scenario's settings as a JSON object (what was simulated, for the results file).
std::string scenario_json(const ScenarioConfig& scenario);

}  // namespace dlcp::sim
