// dlcp in ns-3: the library's protocol endpoint over simulated UDP.
//
// Every protocol decision is the library's own protocol::Endpoint (src/protocol/endpoint.hpp),
// one per host behind the C++17 facade library::HostEndpoint, exactly as the library's socket
// engine drives it: the send queue and its priority order, bursts with their path, codepoint and
// flags (first-round order, protected first, spraying), pacing and rate control, rounds,
// missing-range reports, settlement and Stop, budget groups, deadlines, early arrivals and rate
// reports. This driver only moves bytes and time:
//  - data packets carry the endpoint's real 40-byte header; their payload is zero-filled virtual
//    bytes of the right size (a simulated payload: nothing is read or placed);
//  - each host's NIC sends one packet at a time (nic_free): the driver asks for the next burst
//    when the NIC is free, and wakes at the endpoint's next_send and next_timeout;
//  - control frames, encoded as on the library's control connection, travel over UDP at the
//    control DSCP through a reliable, in-order byte channel per host pair (sequence numbers,
//    cumulative acks, retransmission every control_retry_us beyond the long link's round trip
//    between sites), as TCP carries them in the library;
//    the endpoint does not know;
//  - completions: a receive that settles delivers the message to the workload; a failed one
//    (a deadline: DlcpSimConfig::deadline_ms) or a lost peer is reported on stderr and in the
//    counters, and ends the run at once (the workload would otherwise wait for it forever).
// The workload's own synthetic ranking (one lognormal magnitude per packet) chooses each
// message's protected packets, through the library's policy.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <random>
#include <string>
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
  // Sends or receives that failed (a deadline, a lost peer): never expected. The first one stops
  // the simulation, since the workload would wait for that message until max_sim_ms.
  std::uint64_t messages_failed = 0;
  std::string first_failure;                  // what failed, where and when; empty if nothing did
  std::uint64_t control_frames = 0;           // frames the endpoints sent
  std::uint64_t control_retransmissions = 0;  // control packets the channels resent
  std::uint64_t rejected = 0;                 // datagrams or frames the decoders refused
  std::uint64_t parity_sent = 0;              // parity packets (among data_packets_sent)
  std::uint64_t packets_rebuilt = 0;          // lost packets rebuilt from parity
};

class DlcpTransport : public MessageTransport {
 public:
  DlcpTransport(const Topology& topology, const library::Policy& policy,
                const DlcpSimConfig& config, FlowLog& log, std::uint64_t seed);
  ~DlcpTransport() override;

  void send(const Message& message, Delivered on_delivered) override;
  DlcpCounters counters() const;

 private:
  struct Record;
  struct Host;

  void on_data_readable(ns3::Ptr<ns3::Socket> socket);
  void on_control_readable(ns3::Ptr<ns3::Socket> socket);
  // Carries out what the host's endpoint handed out, then arms its send and timer events.
  void pump(int host);
  void arm(int host);
  void on_send_slot(int host);
  void on_timeout(int host);
  void on_completion(int host, std::uint64_t token, bool is_send, bool ok, const std::string& error,
                     std::uint64_t entries_missing);
  // Reports a failure; the first one stops the simulation (DlcpCounters::first_failure).
  void fail(const std::string& what);

  // The reliable control channel (one per ordered host pair).
  void send_frame(int from, int to, std::vector<std::uint8_t> frame);
  void transmit_frame(int from, int to, std::uint32_t seq, const std::vector<std::uint8_t>& frame);
  void send_ack(int from, int to, std::uint32_t next_expected);
  void on_control_retry(int from, int to);
  // control_retry_us beyond the pair's round trip, as TCP's timeout follows its round trip:
  // between sites the long link's round trip is added, or every frame would be resent many
  // times before its ack could come back.
  ns3::Time control_retry(int from, int to) const;

  double line_rate_bytes() const { return topology_.host_rate_bps / 8.0; }

  const Topology& topology_;
  library::Policy policy_;
  DlcpSimConfig config_;
  FlowLog& log_;
  std::mt19937_64 rng_;
  std::uint32_t stride_ = 0;  // whole floats per packet after IP, UDP and dlcp headers
  std::vector<std::unique_ptr<Host>> hosts_;
  std::unordered_map<const ns3::Socket*, std::pair<int, std::size_t>> data_socket_of_;
  std::vector<Record> messages_;
  std::vector<library::DataPacket> burst_;  // scratch of on_send_slot
  DlcpCounters counters_;
};

}  // namespace dlcp::sim
