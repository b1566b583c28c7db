// dlcp in ns-3: the library's transport rules over simulated UDP.
//
// The protocol is the library's own core (src/protocol/), driven here by ns-3 events as the
// library's socket engine drives it by sockets: each message's sender (first-round order,
// rounds, retransmissions) and receiver (the completion rule, when to report and what to ask
// for) and each destination's pacing are library::MessageSender, library::MessageReceiver and
// library::PeerPacing. This file owns only what the simulator must: simulated sockets, events,
// the send queue, and control packets over UDP. What is modelled (see docs/protocol.md):
//  - packetization into whole float32 values, a 40-byte dlcp header per packet;
//  - policy from the library: priority_class(layer) -> data_tos(class, precedence) sets the DSCP,
//    protected_packets() ranks packets by magnitude (one synthetic value per packet), and the
//    first round sends the protected packets first;
//  - a priority-ordered send queue (class, then post order) per host, so a front-layer tensor
//    overtakes a back-layer one already being sent;
//  - per-packet spraying over `paths` UDP source ports (switches hash them onto different paths);
//  - pacing per peer (the library's PeerPacing: token bucket and rate controller), fed by periodic
//    receiver feedback (bytes, packets, estimated loss, CE marks); with shared_band_pacer (the
//    library's shared_band_pacing) the packets in the band the background shares also pass a
//    pacer of their own, which only the marks in that band cut;
//  - receiver-driven completion: every protected packet plus all but the budget, then Stop;
//  - RoundFinished -> (after a quiet period) MissingRanges, resent protected first.
// Control messages travel as small UDP packets at the control DSCP (the library uses TCP); a lost
// one is recovered by the sender repeating RoundFinished and the receiver repeating Stop.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <unordered_map>
#include <vector>

#include "config.hpp"
#include "ns3/event-id.h"
#include "ns3/socket.h"
#include "topology.hpp"
#include "transport.hpp"

namespace dlcp::sim {

// Whole float32 values one dlcp packet carries over a link of `mtu` bytes, after the IP, UDP and
// dlcp headers: the library's block.
std::uint32_t dlcp_packet_floats(std::uint32_t mtu);

struct DlcpCounters {
  std::uint64_t data_packets_sent = 0;
  std::uint64_t retransmitted_packets = 0;
  std::uint64_t missing_reports = 0;
  std::uint64_t messages_settled = 0;
  std::uint64_t messages_settled_with_loss = 0;
  std::uint64_t entries_total = 0;
  std::uint64_t entries_missing = 0;  // left missing by the bounded-loss rule
  // shared_band_pacer: CE marks in the background's band that only the shared-band pacers
  // reacted to.
  std::uint64_t shared_band_marks = 0;
};

class DlcpTransport : public MessageTransport {
 public:
  DlcpTransport(const Topology& topology, const library::Policy& policy,
                const DlcpSimConfig& config, FlowLog& log, std::uint64_t seed);
  ~DlcpTransport() override;

  void send(const Message& message, Delivered on_delivered) override;
  const DlcpCounters& counters() const { return counters_; }

 private:
  struct OutMessage;
  struct ControlMessage;
  struct Host;

  void on_data_readable(ns3::Ptr<ns3::Socket> socket);
  void on_control_readable(ns3::Ptr<ns3::Socket> socket);
  void try_send(int host);
  void send_one_packet(Host& host, OutMessage& message);
  void send_control(int from, int to, ControlMessage control);

  // Sender side.
  void on_missing_ranges(const ControlMessage& control);
  void on_stop(const ControlMessage& control);
  void on_rate_feedback(const ControlMessage& control);
  void on_retry(std::uint32_t message);
  // Receiver side.
  void on_data(std::uint32_t message, std::uint32_t seq);
  void on_round_finished(const ControlMessage& control);
  void maybe_report(std::uint32_t message);
  void settle(OutMessage& message);
  // Counts the message in its source's messages_mid_round as its receiver now says.
  void sync_mid_round(OutMessage& message);
  void send_stop(OutMessage& message);
  void send_feedback(int host);

  std::int64_t feedback_interval_ns() const {
    return static_cast<std::int64_t>(config_.feedback_interval_us * 1000.0);
  }
  // Whether a packet with this TOS byte waits in the band the background (DSCP 0) is in.
  bool in_shared_band(std::uint8_t tos) const;
  // A host's link in bytes/s: every sender's starting and highest rate, and what a receiver
  // shares among its senders. A sender never drops below a thousandth of it.
  double line_rate_bytes() const { return topology_.host_rate_bps / 8.0; }
  double min_rate_bytes() const { return line_rate_bytes() / 1000.0; }
  // A full data packet on the wire (the datagram), in which the pacers and rates count.
  std::uint64_t full_packet() const;

  const Topology& topology_;
  library::Policy policy_;
  DlcpSimConfig config_;
  FlowLog& log_;
  std::mt19937_64 rng_;
  std::uint32_t payload_bytes_ = 0;  // whole floats per packet after IP, UDP and dlcp headers
  std::vector<std::unique_ptr<Host>> hosts_;
  std::vector<std::unique_ptr<OutMessage>> messages_;
  std::vector<ControlMessage> controls_;
  std::uint64_t post_order_ = 0;
  DlcpCounters counters_;
};

}  // namespace dlcp::sim
