// The data path of the socket engine: the UDP data sockets, batches out (sendmmsg, UDP GSO) and
// in (recvmmsg, or a large payload read straight into place), packet MACs and the diagnostic loss
// injector. It moves bytes between the sockets and the protocol endpoint and decides nothing:
// which packets leave, on which path and with which codepoint is the endpoint's burst.
#pragma once

#include <netinet/in.h>

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "common/time.hpp"
#include "dlcp/options.hpp"
#include "dlcp/transport.hpp"
#include "protocol/endpoint.hpp"
#include "transport/data_socket.hpp"
#include "transport/job_key.hpp"
#include "transport/loss_injector.hpp"
#include "transport/replay_window.hpp"
#include "wire/data_header.hpp"

namespace dlcp::transport {

inline constexpr std::size_t kMaxDatagram = 65507;  // largest UDP payload over IPv4

class DataPlane {
 public:
  // Binds options.paths data sockets (to local_addresses in turn, else to bind_ipv4).
  DataPlane(const TransportOptions& options, std::uint32_t bind_ipv4);

  std::span<const DataSocket> sockets() const { return sockets_; }
  // Whether every socket sends UDP GSO (else the endpoint must not form runs).
  bool gso() const;

  // A peer's data addresses and, with packet MACs, its keys for each direction.
  void add_peer(int rank, std::vector<sockaddr_in> addresses, std::optional<PacketMac> send,
                std::optional<PacketMac> receive);

  // Sends the endpoint's burst; sets burst.run_sent. Returns the datagrams the kernel took.
  std::size_t send(protocol::Burst& burst);
  // Reads what waits on socket `index` into the endpoint.
  void receive(std::size_t index, protocol::Endpoint& endpoint, TimePoint now);

  // Datagrams and bytes received, injected drops and marks, and the refusals counted here.
  void add_counters(TransportCounters& counters) const;
  const wire::RejectCounters& rejects() const { return rejects_; }

 private:
  struct PeerKeys {
    std::vector<sockaddr_in> addresses;
    std::optional<PacketMac> mac_send;
    std::optional<PacketMac> mac_receive;
    std::uint64_t mac_counter = 0;  // next counter to send
    std::optional<ReplayWindow> replay;
  };

  void receive_batch(std::size_t index, protocol::Endpoint& endpoint, TimePoint now);
  void receive_direct(std::size_t index, protocol::Endpoint& endpoint, TimePoint now);
  // Packet MAC and anti-replay of a decoded datagram; false when refused (counted).
  bool authenticate(const wire::DataHeader& header, std::span<const std::byte> datagram);
  // Whether the injector drops the packet (counted).
  bool injected_drop(const wire::DataHeader& header);
  // The TOS as read, or with a CE mark the injector adds (counted).
  std::uint8_t marked(const wire::DataHeader& header, std::uint8_t tos);

  const TransportOptions& options_;
  std::vector<DataSocket> sockets_;
  std::vector<std::uint8_t> direct_receive_;  // per socket: large datagrams, placed without a copy
  std::optional<LossInjector> injector_;
  wire::DataExpectations expectations_;
  std::vector<PeerKeys> peers_;
  std::size_t trailer_bytes_ = 0;   // after every data payload: the MAC trailer, if any
  std::size_t iov_per_packet_ = 2;  // header, payload (, trailer)
  // Send scratch reused for every burst.
  std::vector<std::byte> header_scratch_;
  std::vector<std::byte> trailer_scratch_;
  std::vector<std::byte> payload_scratch_;  // 16-bit payloads of the burst, one slot per packet
  std::vector<std::byte> direct_scratch_ = std::vector<std::byte>(65536);  // a 16-bit payload
  std::vector<iovec> iov_scratch_;
  std::vector<std::vector<OutgoingDatagram>> per_socket_;
  std::vector<std::vector<std::size_t>> per_socket_runs_;  // the burst's run of each entry
  wire::RejectCounters rejects_;
  TransportCounters counted_;  // datagrams and bytes received, injected drops and marks
};

}  // namespace dlcp::transport
