// Messages over ns-3 TCP, one connection per message (a "flow"), as the DCTCP, pFabric and PIAS
// evaluations model them, or (GradientConnections::kPersistent) gradient messages over one kept
// connection per pair of hosts. The congestion control (DCTCP or NewReno) is chosen globally by
// the experiment; this class only decides each message's DSCP:
//  - kNone: everything in one class (DCTCP, NewReno);
//  - kRemainingSize: pFabric-like, the fewer bytes a flow has left to send the more urgent;
//  - kBytesSent: PIAS-like multi-level feedback queue, a flow is demoted as it sends more.
// The level (0..7) maps to the policy's DSCP of that class, so switches need one configuration.
// On a kept connection the level is the message's, not the connection's: the connection carries
// one message at a time, so the bytes it sends belong to one message (re-sent ones aside).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "config.hpp"
#include "ns3/socket.h"
#include "topology.hpp"
#include "transport.hpp"

namespace dlcp::sim {

enum class TcpPriority { kNone, kRemainingSize, kBytesSent };

// How often TCP had to recover from loss, for the flows of one kind. Tail flow completion times
// of TCP are mostly made of these, timeouts above all.
struct TcpLossCounters {
  std::uint64_t connections = 0;
  std::uint64_t syns_sent = 0;        // more than `connections` when handshakes timed out
  std::uint64_t timeouts = 0;         // entries into loss recovery by the retransmission timer
  std::uint64_t fast_recoveries = 0;  // entries into recovery by duplicate ACKs
  std::uint64_t probes = 0;           // one-byte segments sent in pFabric's probe mode

  std::uint64_t syn_retransmissions() const {
    return syns_sent > connections ? syns_sent - connections : 0;
  }
};

class TcpTransport : public MessageTransport {
 public:
  // `timer`: how every socket retransmits (pFabric's repeats its timeout and may probe);
  // `close`: how a receiver closes after an early FIN; `gradients`: whether gradient messages
  // take a connection each or share their pair's kept one.
  TcpTransport(const Topology& topology, const library::Policy& policy, TcpPriority priority,
               RetransmitTimer timer, EarlyFinClose close, GradientConnections gradients,
               FlowLog& log);
  ~TcpTransport() override;

  void send(const Message& message, Delivered on_delivered) override;

  // Counted on the sending side of each flow: its receiver only acknowledges.
  const TcpLossCounters& loss_counters(FlowKind kind) const {
    return kind == FlowKind::kGradient ? gradient_losses_ : background_losses_;
  }

 private:
  struct Flow;        // a message on a connection of its own
  struct Connection;  // a pair's kept connection and the gradient messages posted to it

  TcpLossCounters& losses_of(FlowKind kind) {
    return kind == FlowKind::kGradient ? gradient_losses_ : background_losses_;
  }
  // A bound sending socket on `src`, counted and traced as `kind`'s, for the caller to connect
  // once its callbacks are in place; `source` is set to its (address, port), by which the
  // listener's accepted socket is matched to it.
  ns3::Ptr<ns3::Socket> open_connection(int src, FlowKind kind,
                                        std::pair<std::uint32_t, std::uint16_t>* source);

  void send_flow(const Message& message, Delivered on_delivered);
  void on_connected(ns3::Ptr<ns3::Socket> socket);
  void on_connect_failed(ns3::Ptr<ns3::Socket> socket);
  void on_writable(ns3::Ptr<ns3::Socket> socket, std::uint32_t available);
  void on_data_sent(ns3::Ptr<ns3::Socket> socket, std::uint32_t bytes);
  void on_accept(ns3::Ptr<ns3::Socket> socket, const ns3::Address& from);
  void on_readable(ns3::Ptr<ns3::Socket> socket);
  void write_more(Flow& flow);
  void update_tos(Flow& flow);

  void send_on_connection(const Message& message, Delivered on_delivered);
  void on_connection_established(ns3::Ptr<ns3::Socket> socket);
  void on_connection_writable(ns3::Ptr<ns3::Socket> socket, std::uint32_t available);
  void on_connection_data_sent(ns3::Ptr<ns3::Socket> socket, std::uint32_t bytes);
  void on_connection_readable(ns3::Ptr<ns3::Socket> socket);
  // Writes the current message on, or, once it has all left, starts the most urgent waiting one.
  void pump(Connection& connection);
  void update_tos(Connection& connection);

  // Sets `socket`'s DSCP to level `level`'s unless it has it already (`*current`, -1 = none).
  void set_level(ns3::Socket& socket, int level, int* current) const;
  int level_of_message(std::uint64_t bytes, std::uint64_t sent) const;
  std::uint8_t tos_of_level(int level) const;

  const Topology& topology_;
  library::Policy policy_;
  TcpPriority priority_;
  RetransmitTimer timer_;
  EarlyFinClose close_;
  GradientConnections gradient_connections_;
  FlowLog& log_;
  std::vector<ns3::Ptr<ns3::Socket>> listeners_;
  std::unordered_map<const Flow*, std::unique_ptr<Flow>> flows_;        // the unfinished ones
  std::map<std::pair<std::uint32_t, std::uint16_t>, Flow*> by_source_;  // (address, port)
  std::unordered_map<ns3::Socket*, Flow*> by_socket_;
  std::map<std::pair<int, int>, std::unique_ptr<Connection>> connections_;  // by (src, dst)
  std::map<std::pair<std::uint32_t, std::uint16_t>, Connection*> connection_by_source_;
  std::unordered_map<ns3::Socket*, Connection*> connection_by_socket_;  // both ends' sockets
  std::uint64_t posted_ = 0;  // messages posted to kept connections, their order among equals
  TcpLossCounters gradient_losses_;
  TcpLossCounters background_losses_;
};

}  // namespace dlcp::sim
