// The simulator must be a driver of the library's protocol endpoint and nothing more: fed the
// same exchange, its bridge (library::HostEndpoint, sim/bridge/) must hand out exactly what
// protocol::Endpoint hands the socket engine. This test scripts exchanges between three hosts
// (posts, early arrivals, a budget group, a receive that reaches its deadline) over a scripted
// network (data loss, duplicates, reordering; control frames in order, as TCP delivers them;
// timer expiries at fixed instants) and runs them twice: (a) through protocol::Endpoint objects
// driven as the engine drives them (next_burst, the whole burst sent, burst_sent, take_outputs,
// on_timeout when due; datagrams decoded and handed to on_datagram; control frames encoded and
// decoded), and (b) through the simulator's HostEndpoint objects. Every output is logged as a
// line: data packets (peer, path, codepoint, the encoded 40-byte header, payload size), control
// frames (their encoded bytes), completions, and each host's next_timeout and next_send. The
// test fails on the first line that differs.
//
// Compiled as C++20 (it includes the endpoint's headers); the facade's header is C++17-clean.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "../src/library.hpp"
#include "protocol/endpoint.hpp"
#include "switch/switch_plan.hpp"
#include "wire/control.hpp"
#include "wire/data_header.hpp"

namespace dlcp::sim {
namespace {

constexpr int kHosts = 3;
constexpr std::uint16_t kStride = 100;  // floats per packet
constexpr double kLineRate = 1.25e9;    // bytes/s (10 Gbit/s)
constexpr std::int64_t kFeedbackNs = 20'000;
constexpr std::int64_t kQuietNs = 50'000;
constexpr std::size_t kPaths = 4;
constexpr std::int64_t kStepNs = 1'000;
constexpr int kBurstsPerStep = 4;  // as the engine's send_step

struct Packet {
  int from = 0;
  int to = 0;
  std::size_t path = 0;
  std::uint8_t tos = 0;
  std::array<std::uint8_t, 40> header{};
  std::uint32_t payload_bytes = 0;
};

struct Frame {
  int from = 0;
  int to = 0;
  std::vector<std::uint8_t> bytes;
};

struct Done {
  std::uint64_t token = 0;
  bool is_send = false;
  bool ok = true;
  std::string error;
  std::uint64_t entries_missing = 0;
};

struct Post {
  std::int64_t at_ns = 0;
  bool is_send = false;
  int host = 0;
  library::Request request;
};

std::string hex(const std::uint8_t* bytes, std::size_t size) {
  static const char* digits = "0123456789abcdef";
  std::string text;
  for (std::size_t i = 0; i < size; ++i) {
    text += digits[bytes[i] >> 4];
    text += digits[bytes[i] & 15];
  }
  return text;
}

// `parity_members`: TransportOptions::parity_members of every host.
library::HostEndpointOptions host_options(int rank, const library::Policy& policy,
                                          std::uint8_t parity_members) {
  library::HostEndpointOptions o;
  o.rank = rank;
  o.parity_members = parity_members;
  o.world_size = kHosts;
  o.line_rate_bytes = kLineRate;
  o.feedback_interval_ns = kFeedbackNs;
  o.quiet_before_report_ns = kQuietNs;
  o.shared_band_dscps = policy.switch_bands(false).shares_best_effort;
  return o;
}

library::PeerPath peer_path() {
  library::PeerPath path;
  path.datagram_bytes = 40 + kStride * 4u;
  path.stride = kStride;
  path.send_paths = kPaths;
  path.receive_paths = kPaths;
  return path;
}

TimePoint at(std::int64_t ns) {
  return TimePoint(std::chrono::nanoseconds(ns));
}
std::int64_t ns_of(TimePoint t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

// (a) protocol::Endpoint, driven as the socket engine drives it.
class EngineSide {
 public:
  EngineSide(const library::Policy& policy, std::uint8_t parity_members) {
    const auto plan = switchconf::make_switch_plan(PolicyOptions{}.dscp, switchconf::PortOptions{});
    for (int h = 0; h < kHosts; ++h) {
      const library::HostEndpointOptions o = host_options(h, policy, parity_members);
      protocol::EndpointOptions e;
      e.rank = h;
      e.parity_members = parity_members;
      e.world_size = kHosts;
      e.rate.initial_rate = kLineRate;
      e.rate.max_rate = kLineRate;
      e.rate.min_rate = kLineRate / 1000.0;
      e.rate.receive_rate = kLineRate;
      e.feedback_interval = std::chrono::nanoseconds(kFeedbackNs);
      e.quiet_before_report = std::chrono::nanoseconds(kQuietNs);
      e.burst_packets = o.burst_packets;
      e.max_run_packets = o.max_run_packets;
      e.datagram_overhead_bytes = o.datagram_overhead_bytes;
      e.shared_band_dscps = switchconf::shares_best_effort_class(plan);
      e.receive_rate = kLineRate;
      endpoints_.push_back(std::make_unique<protocol::Endpoint>(e));
      expectations_.push_back({0, static_cast<std::uint16_t>(h), kHosts, false});
      for (int p = 0; p < kHosts; ++p) {
        if (p == h) continue;
        protocol::PeerLink link;
        link.address = "host " + std::to_string(p);
        link.datagram_bytes = 40 + kStride * 4u;
        link.stride = kStride;
        link.send_paths = kPaths;
        link.receive_paths = kPaths;
        endpoints_.back()->on_peer_joined(p, link, at(0));
      }
    }
  }

  void post(const Post& post, std::int64_t now) {
    MessageOptions options;
    options.layer = post.request.layer;
    options.num_layers = post.request.num_layers;
    options.loss_budget = post.request.loss_budget;
    options.deadline = std::chrono::milliseconds(post.request.deadline_ms);
    options.budget_group = post.request.budget_group;
    options.budget_group_size = post.request.budget_group_size;
    protocol::Endpoint& e = *endpoints_[static_cast<std::size_t>(post.host)];
    if (post.is_send) {
      protocol::SendRequest send;
      send.key = {post.request.peer, post.request.message_id};
      send.token = post.request.token;
      send.total_floats = post.request.total_floats;
      send.options = options;
      if (!post.request.protected_flags.empty())
        send.protected_flags = post.request.protected_flags;
      e.post_send(std::move(send), at(now));
    } else {
      protocol::ReceiveRequest receive;
      receive.key = {post.request.peer, post.request.message_id};
      receive.token = post.request.token;
      receive.total_floats = post.request.total_floats;
      receive.options = options;
      e.post_receive(std::move(receive), at(now));
    }
  }

  // The engine's send_step: bursts while the endpoint has them, each sent whole.
  void send_step(int host, std::int64_t now, std::vector<Packet>& out) {
    protocol::Endpoint& e = *endpoints_[static_cast<std::size_t>(host)];
    for (int b = 0; b < kBurstsPerStep; ++b) {
      if (!e.next_burst(at(now), burst_)) return;
      for (const auto& run : burst_.runs) {
        for (std::size_t k = run.first; k < run.first + run.count; ++k) {
          Packet p;
          p.from = host;
          p.to = burst_.peer;
          p.path = run.path;
          p.tos = burst_.packets[k].tos;
          wire::encode_data_header(burst_.packets[k].header,
                                   std::as_writable_bytes(std::span(p.header)));
          p.payload_bytes = burst_.packets[k].header.payload_bytes;
          out.push_back(p);
        }
      }
      burst_.run_sent.assign(burst_.runs.size(), 1);
      e.burst_sent(burst_, at(now));
    }
  }

  void on_datagram(const Packet& p, std::int64_t now) {
    std::vector<std::byte> datagram(40 + p.payload_bytes);
    std::memcpy(datagram.data(), p.header.data(), 40);
    auto decoded =
        wire::decode_data_packet(datagram, expectations_[static_cast<std::size_t>(p.to)]);
    if (!decoded) return;
    endpoints_[static_cast<std::size_t>(p.to)]->on_datagram(*decoded, datagram, p.tos, p.path,
                                                            at(now));
  }

  void on_control(const Frame& f, std::int64_t now) {
    const auto bytes = std::as_bytes(std::span(f.bytes));
    auto message = wire::decode_control_body(bytes.subspan(wire::kControlLengthPrefixBytes));
    if (!message) return;
    endpoints_[static_cast<std::size_t>(f.to)]->on_control(f.from, *message, at(now));
  }

  void timers(int host, std::int64_t now) {
    protocol::Endpoint& e = *endpoints_[static_cast<std::size_t>(host)];
    if (at(now) >= e.next_timeout(at(now))) e.on_timeout(at(now));
  }

  void outputs(int host, std::vector<Frame>& frames, std::vector<Done>& done) {
    endpoints_[static_cast<std::size_t>(host)]->take_outputs(outputs_);
    for (const auto& c : outputs_.control) {
      std::vector<std::byte> encoded;
      wire::encode_control(c.message, encoded);
      Frame f{host, c.peer, std::vector<std::uint8_t>(encoded.size())};
      std::memcpy(f.bytes.data(), encoded.data(), encoded.size());
      frames.push_back(std::move(f));
    }
    for (const auto& c : outputs_.completions) {
      done.push_back({c.token, c.is_send, !c.error.has_value(), c.error ? c.error->what() : "",
                      c.result.stats.entries_missing});
    }
  }

  std::pair<std::int64_t, std::int64_t> next(int host, std::int64_t now) {
    protocol::Endpoint& e = *endpoints_[static_cast<std::size_t>(host)];
    const TimePoint timeout = e.next_timeout(at(now));
    const auto send = e.next_send(at(now));
    return {timeout == TimePoint::max() ? std::numeric_limits<std::int64_t>::max() : ns_of(timeout),
            send ? ns_of(*send) : -1};
  }

 private:
  std::vector<std::unique_ptr<protocol::Endpoint>> endpoints_;
  std::vector<wire::DataExpectations> expectations_;
  protocol::Burst burst_;
  protocol::EndpointOutputs outputs_;
};

// (b) the simulator's bridge.
class SimulatorSide {
 public:
  SimulatorSide(const library::Policy& policy, std::uint8_t parity_members) {
    for (int h = 0; h < kHosts; ++h) {
      hosts_.push_back(
          std::make_unique<library::HostEndpoint>(policy, host_options(h, policy, parity_members)));
      for (int p = 0; p < kHosts; ++p) {
        if (p != h) hosts_.back()->peer_joined(p, peer_path(), 0);
      }
    }
  }

  void post(const Post& post, std::int64_t now) {
    library::HostEndpoint& e = *hosts_[static_cast<std::size_t>(post.host)];
    if (post.is_send) {
      e.post_send(post.request, now);
    } else {
      e.post_receive(post.request, now);
    }
  }

  void send_step(int host, std::int64_t now, std::vector<Packet>& out) {
    library::HostEndpoint& e = *hosts_[static_cast<std::size_t>(host)];
    for (int b = 0; b < kBurstsPerStep; ++b) {
      if (!e.next_burst(now, packets_)) return;
      for (const auto& d : packets_) {
        Packet p;
        p.from = host;
        p.to = d.peer;
        p.path = d.path;
        p.tos = d.tos;
        p.header = d.header;
        p.payload_bytes = d.payload_bytes;
        out.push_back(p);
      }
      e.burst_sent(now);
    }
  }

  void on_datagram(const Packet& p, std::int64_t now) {
    hosts_[static_cast<std::size_t>(p.to)]->on_datagram(p.header.data(), p.payload_bytes, p.tos,
                                                        p.path, now);
  }

  void on_control(const Frame& f, std::int64_t now) {
    hosts_[static_cast<std::size_t>(f.to)]->on_control(f.from, f.bytes.data(), f.bytes.size(), now);
  }

  void timers(int host, std::int64_t now) {
    library::HostEndpoint& e = *hosts_[static_cast<std::size_t>(host)];
    if (now >= e.next_timeout_ns(now)) e.on_timeout(now);
  }

  void outputs(int host, std::vector<Frame>& frames, std::vector<Done>& done) {
    hosts_[static_cast<std::size_t>(host)]->take_outputs(outputs_);
    for (auto& c : outputs_.control) frames.push_back({host, c.peer, std::move(c.bytes)});
    for (const auto& c : outputs_.completions) {
      done.push_back({c.token, c.is_send, c.ok, c.error, c.entries_missing});
    }
  }

  std::pair<std::int64_t, std::int64_t> next(int host, std::int64_t now) {
    library::HostEndpoint& e = *hosts_[static_cast<std::size_t>(host)];
    return {e.next_timeout_ns(now), e.next_send_ns(now)};
  }

 private:
  std::vector<std::unique_ptr<library::HostEndpoint>> hosts_;
  std::vector<library::DataPacket> packets_;
  library::HostOutputs outputs_;
};

struct Network {
  double loss = 0;
  double duplicates = 0;
  std::int64_t max_jitter_ns = 0;  // data: delivered 2 us + up to this later (reorders)
  std::uint64_t seed = 0;
};

struct Script {
  std::vector<Post> posts;
  Network network;
  std::int64_t end_ns = 0;
};

// Runs the script through one side; returns one line per output, in order.
template <class Side>
std::vector<std::string> run(Side& side, const Script& script) {
  std::vector<std::string> log;
  std::mt19937_64 rng(script.network.seed);
  std::multimap<std::int64_t, Packet> data;  // by arrival time (equal times: in send order)
  std::multimap<std::int64_t, Frame> control;
  std::vector<std::int64_t> last_control_arrival(kHosts * kHosts, 0);
  std::vector<std::pair<std::int64_t, std::int64_t>> last_next(kHosts, {-2, -2});
  std::size_t next_post = 0;
  std::vector<Packet> sent;
  std::vector<Frame> frames;
  std::vector<Done> done;
  for (std::int64_t now = 0; now <= script.end_ns; now += kStepNs) {
    std::ostringstream line;
    while (next_post < script.posts.size() && script.posts[next_post].at_ns <= now) {
      side.post(script.posts[next_post++], now);
    }
    for (auto it = control.begin(); it != control.end() && it->first <= now;
         it = control.erase(it)) {
      side.on_control(it->second, now);
    }
    for (auto it = data.begin(); it != data.end() && it->first <= now; it = data.erase(it)) {
      side.on_datagram(it->second, now);
    }
    for (int h = 0; h < kHosts; ++h) {
      side.timers(h, now);
      sent.clear();
      side.send_step(h, now, sent);
      frames.clear();
      done.clear();
      side.outputs(h, frames, done);
      for (const Packet& p : sent) {
        log.push_back("t=" + std::to_string(now) + " data " + std::to_string(p.from) + "->" +
                      std::to_string(p.to) + " path=" + std::to_string(p.path) + " tos=" +
                      std::to_string(p.tos) + " payload=" + std::to_string(p.payload_bytes) +
                      " header=" + hex(p.header.data(), 40));
        // The network's fate for it, drawn in send order (the same draws while both agree).
        const bool lost = std::bernoulli_distribution(script.network.loss)(rng);
        const bool duplicated = std::bernoulli_distribution(script.network.duplicates)(rng);
        const std::int64_t delay = 2'000 + std::uniform_int_distribution<std::int64_t>(
                                               0, script.network.max_jitter_ns)(rng);
        if (lost) continue;
        data.emplace(now + delay, p);
        if (duplicated) data.emplace(now + delay + 3'000, p);
      }
      for (Frame& f : frames) {
        log.push_back("t=" + std::to_string(now) + " control " + std::to_string(f.from) + "->" +
                      std::to_string(f.to) + " " + hex(f.bytes.data(), f.bytes.size()));
        // In order per pair, as on a TCP connection.
        std::int64_t& last = last_control_arrival[static_cast<std::size_t>(f.from * kHosts + f.to)];
        last = std::max(last, now + 3'000);
        control.emplace(last, std::move(f));
      }
      for (const Done& d : done) {
        log.push_back("t=" + std::to_string(now) + " host " + std::to_string(h) +
                      (d.is_send ? " send " : " receive ") + std::to_string(d.token) +
                      (d.ok ? " ok" : " FAILED " + d.error) +
                      " missing=" + std::to_string(d.entries_missing));
      }
      const auto next = side.next(h, now);
      if (next != last_next[static_cast<std::size_t>(h)]) {
        last_next[static_cast<std::size_t>(h)] = next;
        log.push_back("t=" + std::to_string(now) + " host " + std::to_string(h) + " next_timeout=" +
                      std::to_string(next.first) + " next_send=" + std::to_string(next.second));
      }
    }
  }
  return log;
}

Script random_script(std::uint64_t seed, const library::Policy& policy) {
  std::mt19937_64 rng(seed);
  Script script;
  const double losses[] = {0.0, 0.01, 0.05, 0.2};
  script.network.loss = losses[seed % 4];
  script.network.duplicates = seed % 3 == 0 ? 0.05 : 0.0;
  script.network.max_jitter_ns = (seed % 2) ? 20'000 : 500;
  script.network.seed = rng();
  std::uint64_t token = 0;
  const auto add = [&](int from, int to, std::int64_t send_at, std::int64_t receive_at,
                       std::uint32_t floats, int layer, double budget, std::uint64_t group,
                       std::uint32_t group_size, std::int64_t deadline_ms) {
    library::Request r;
    r.message_id = token;
    r.token = token++;
    r.total_floats = floats;
    r.layer = layer;
    r.num_layers = 8;
    r.loss_budget = budget;
    r.deadline_ms = deadline_ms;
    if (budget > 0) {
      const std::uint32_t packets = (floats + kStride - 1) / kStride;
      std::lognormal_distribution<float> magnitude(0.0f, 1.0f);
      std::vector<float> mean_abs(packets);
      for (float& v : mean_abs) v = magnitude(rng);
      r.protected_flags = policy.protected_packets(mean_abs.data(), mean_abs.size(), 1);
    }
    if (send_at >= 0) {
      Post send{send_at, true, from, r};
      send.request.peer = to;
      script.posts.push_back(send);
    }
    Post receive{receive_at, false, to, r};
    receive.request.peer = from;
    receive.request.protected_flags.clear();
    receive.request.budget_group = group;
    receive.request.budget_group_size = group_size;
    script.posts.push_back(receive);
  };
  std::uniform_int_distribution<std::uint32_t> size(1, 12'000);
  std::uniform_int_distribution<int> layer(0, 7);
  const double budgets[] = {0.0, 0.01, 0.05, 0.2};
  for (int i = 0; i < 6; ++i) {
    const int from = static_cast<int>(rng() % kHosts);
    const int to = (from + 1 + static_cast<int>(rng() % (kHosts - 1))) % kHosts;
    const std::int64_t t = static_cast<std::int64_t>(rng() % 200) * 1'000;
    // Some receives are posted after their packets arrive (the early-arrival backlog).
    const std::int64_t receive_t = (rng() % 3 == 0) ? t + 30'000 : t;
    add(from, to, t, receive_t, size(rng), layer(rng), budgets[rng() % 4], 0, 0, 30'000);
  }
  // A budget group: hosts 0 and 1 push one segment each to host 2.
  const std::uint32_t segment = size(rng);
  add(0, 2, 10'000, 10'000, segment, 3, 0.05, 77, 2, 30'000);
  add(1, 2, 40'000, 40'000, segment, 3, 0.05, 77, 2, 30'000);
  // A receive no one sends: it fails at its deadline (2 ms), and so does a send no one receives.
  add(1, 0, -1, 5'000, 500, 0, 0.0, 0, 0, 2);
  std::stable_sort(script.posts.begin(), script.posts.end(),
                   [](const Post& a, const Post& b) { return a.at_ns < b.at_ns; });
  script.end_ns = 3'000'000;
  return script;
}

TEST(ProtocolDifferential, BridgeHandsOutWhatTheEndpointDoes) {
  const library::Policy policy;
  for (std::uint64_t seed = 1; seed <= 12; ++seed) {
    const Script script = random_script(seed, policy);
    // Every third script with parity, rebuilding lost packets on both sides alike.
    const std::uint8_t parity = seed % 3 == 1 ? 4 : 0;
    EngineSide engine(policy, parity);
    SimulatorSide simulator(policy, parity);
    const std::vector<std::string> expected = run(engine, script);
    const std::vector<std::string> got = run(simulator, script);
    std::size_t i = 0;
    while (i < expected.size() && i < got.size() && expected[i] == got[i]) ++i;
    if (i == expected.size() && i == got.size()) {
      // Each script must have exercised the protocol: packets, completions, a deadline.
      const auto count = [&](const std::string& what) {
        return std::count_if(expected.begin(), expected.end(), [&](const std::string& line) {
          return line.find(what) != std::string::npos;
        });
      };
      EXPECT_GT(count(" data "), 50) << "seed " << seed;
      EXPECT_GE(count(" receive "), 8) << "seed " << seed;
      EXPECT_GE(count("FAILED"), 1) << "seed " << seed;
      continue;
    }
    std::ostringstream context;
    for (std::size_t k = i >= 3 ? i - 3 : 0; k < i; ++k)
      context << "  same: " << expected[k] << "\n";
    context << "  endpoint:  " << (i < expected.size() ? expected[i] : "(nothing more)") << "\n";
    context << "  simulator: " << (i < got.size() ? got[i] : "(nothing more)") << "\n";
    FAIL() << "seed " << seed << ": output " << i << " of " << expected.size() << " differs:\n"
           << context.str();
  }
}

}  // namespace
}  // namespace dlcp::sim
