// Writes the committed seed corpora for the wire fuzzers. Built by hand only (not by CMake), with
// one command line:
//   g++ -std=c++20 -Iinclude -Isrc -o /tmp/make_seeds fuzz/make_seed_corpus.cpp
//       src/wire/*.cpp src/rendezvous/store_*.cpp src/collectives/ps_descriptor.cpp
//   /tmp/make_seeds fuzz/corpus
// writes fuzz/corpus/data_header/*.bin (whole datagrams, decoded by data_header_fuzz against job
// token 0x0123456789ABCDEF, local rank 1, world size 4, with and without packet MACs; seeds with
// a MAC trailer carry a fixed, not a computed, tag: the codec does not verify it),
// fuzz/corpus/control/*.bin (one seed per message type, valid, and some invalid ones) and
// fuzz/corpus/store_protocol/*.bin (frame bodies without the length prefix) and
// fuzz/corpus/ps_descriptor/*.bin (a worker count byte, then each worker's descriptor).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "collectives/ps_descriptor.hpp"
#include "rendezvous/store_protocol.hpp"
#include "wire/control.hpp"
#include "wire/data_header.hpp"
#include "wire/values.hpp"

namespace {

using namespace dlcp::wire;
namespace fs = std::filesystem;

void write_file(const fs::path& path, const std::vector<std::byte>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  if (!out) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    std::exit(1);
  }
}

std::vector<std::byte> datagram(const DataHeader& h) {
  std::vector<std::byte> d(kDataHeaderBytes + h.payload_bytes + h.trailer_bytes());
  encode_data_header(h, d);
  if (h.is_authenticated()) {
    MacTrailer trailer;
    trailer.counter = 0x1122334455667788ull;
    for (std::size_t i = 0; i < kMacTagBytes; ++i) trailer.tag[i] = static_cast<std::uint8_t>(i);
    encode_mac_trailer(trailer,
                       std::span<std::byte>(d).subspan(kDataHeaderBytes + h.payload_bytes));
  }
  std::vector<float> values(values_fitting(h.wire, h.payload_bytes));
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i) * 0.25f - 1.0f;
  if (payload_bytes(h.wire, values.size()) == h.payload_bytes) {
    encode_values(values, h.wire,
                  std::span<std::byte>(d).subspan(kDataHeaderBytes, h.payload_bytes));
  }
  return d;
}

DataHeader base_header() {
  DataHeader h;
  h.flags = data_flags::kProtected;
  h.job_token = 0x0123456789ABCDEFull;
  h.src_rank = 2;
  h.dst_rank = 1;
  h.message_id = 42;
  h.seq = 0;
  h.total_floats = 20;
  h.stride_floats = 8;  // packets of 8, 8, 4 floats
  h.contributions = 1;
  h.priority_class = 2;
  h.payload_bytes = 32;
  h.pair_seq = 513;
  return h;
}

std::vector<std::byte> body(const ControlMessage& m) {
  std::vector<std::byte> frame;
  encode_control(m, frame);
  return {frame.begin() + static_cast<std::ptrdiff_t>(kControlLengthPrefixBytes), frame.end()};
}

void write_data_seeds(const fs::path& dir) {
  fs::create_directories(dir);
  DataHeader h = base_header();
  write_file(dir / "valid_first.bin", datagram(h));
  for (const auto& [dtype, name] : {std::pair{dlcp::WireDtype::kBfloat16, "valid_bf16.bin"},
                                    std::pair{dlcp::WireDtype::kFloat16, "valid_fp16.bin"}}) {
    DataHeader sixteen = base_header();
    sixteen.wire = dtype;
    sixteen.payload_bytes = static_cast<std::uint16_t>(payload_bytes(dtype, 8));
    write_file(dir / name, datagram(sixteen));
  }

  h.seq = 2;
  h.payload_bytes = 16;
  h.flags = data_flags::kLastOfRound;
  write_file(dir / "valid_last_short.bin", datagram(h));

  h = base_header();
  h.seq = 1;
  h.flags = data_flags::kProtected | data_flags::kRetransmission | data_flags::kLastOfRound;
  h.round = 3;
  h.contributions = 4;
  h.priority_class = 7;
  write_file(dir / "valid_retransmission.bin", datagram(h));

  h = base_header();
  h.flags = data_flags::kProtected | data_flags::kParity;
  h.seq = 3 + 1;  // packet_count + group 1; a full packet's payload
  write_file(dir / "valid_parity.bin", datagram(h));

  h = base_header();
  h.total_floats = 1;
  h.stride_floats = 360;
  h.payload_bytes = 4;
  h.message_id = std::numeric_limits<std::uint64_t>::max();
  write_file(dir / "valid_single_float.bin", datagram(h));

  auto d = datagram(base_header());
  d.resize(kDataHeaderBytes - 1);
  write_file(dir / "invalid_too_short.bin", d);

  d = datagram(base_header());
  d[0] = std::byte{1};  // the format before pair_seq
  write_file(dir / "invalid_version.bin", d);

  h = base_header();
  h.seq = 2;  // a full-size payload on the short last packet
  write_file(dir / "invalid_payload_length.bin", datagram(h));

  h = base_header();
  h.flags |= data_flags::kAuthenticated;
  write_file(dir / "valid_authenticated.bin", datagram(h));
  d = datagram(h);
  d.resize(d.size() - 1);  // trailer one byte short
  write_file(dir / "invalid_truncated_trailer.bin", d);
}

void write_control_seeds(const fs::path& dir) {
  fs::create_directories(dir);
  Hello hello;
  hello.job_token = 0x0123456789ABCDEFull;
  hello.rank = 1;
  hello.world_size = 4;
  hello.data_sockets = {{0x7F000001u, 40000}, {0x7F000001u, 40001}};
  for (std::size_t i = 0; i < kNonceBytes; ++i) hello.nonce[i] = static_cast<std::uint8_t>(i * 5);
  hello.features =
      hello_features::kPairSeq | hello_features::kSharedBandMarks | hello_features::kWireDtypes;
  write_file(dir / "valid_hello.bin", body(hello));
  hello.features |= hello_features::kPacketMac;
  write_file(dir / "valid_hello_packet_mac.bin", body(hello));

  FlowStart flow;
  flow.message_id = 42;
  flow.total_floats = 100;
  flow.stride_floats = 8;
  flow.priority_class = 2;
  flow.loss_budget_ppm = 10'000;
  flow.packet_count = 13;
  flow.protected_bitmap = {0x81, 0x12};
  flow.protected_count = 4;
  write_file(dir / "valid_flow_start.bin", body(flow));

  write_file(dir / "valid_round_finished.bin", body(RoundFinished{42, 1, 13}));

  MissingRanges missing;
  missing.message_id = 42;
  missing.round = 1;
  missing.ranges = {{1, 2}, {5, 1}, {10, 3}};
  write_file(dir / "valid_missing_ranges.bin", body(missing));

  Stop stop;
  stop.message_id = 42;
  stop.reason = StopReason::kBoundReached;
  stop.packets_received = 12;
  stop.packets_missing = 1;
  write_file(dir / "valid_stop.bin", body(stop));

  RateFeedback feedback;
  feedback.interval_us = 1000;
  feedback.received_bytes = 1'440'000;
  feedback.received_packets = 1000;
  feedback.lost_packets_estimate = 3;
  feedback.ce_marked_packets = 7;
  feedback.ce_marked_shared_band = 5;
  feedback.offered_rate = 781'250'000;
  feedback.path_received = {500, 500};
  write_file(dir / "valid_rate_feedback.bin", body(feedback));

  write_file(dir / "valid_abort.bin",
             body(Abort{"rank 2 (127.0.0.1:40000) closed the control connection"}));
  write_file(dir / "valid_goodbye.bin", body(Goodbye{}));
  Authenticate authenticate;
  for (std::size_t i = 0; i < kProofBytes; ++i)
    authenticate.proof[i] = static_cast<std::uint8_t>(i);
  write_file(dir / "valid_authenticate.bin", body(authenticate));

  auto bad = body(stop);
  bad[0] = std::byte{2};
  write_file(dir / "invalid_version.bin", bad);

  bad = body(stop);
  bad[1] = std::byte{0x7F};
  write_file(dir / "invalid_type.bin", bad);

  bad = body(flow);
  bad.pop_back();
  write_file(dir / "invalid_truncated_flow_start.bin", bad);

  bad = body(authenticate);
  bad.pop_back();
  write_file(dir / "invalid_truncated_authenticate.bin", bad);

  bad = body(hello);
  bad.resize(bad.size() - kNonceBytes - 1);  // the layout before Hello carried a nonce
  write_file(dir / "invalid_hello_without_nonce.bin", bad);

  missing.ranges = {{5, 1}, {1, 2}};
  write_file(dir / "invalid_unsorted_ranges.bin", body(missing));

  flow.protected_count = 5;
  write_file(dir / "invalid_popcount.bin", body(flow));
}

std::vector<std::byte> store_body(const dlcp::rendezvous::StoreRequest& request) {
  std::vector<std::byte> frame;
  dlcp::rendezvous::encode_store_request(request, frame);
  return {frame.begin() + static_cast<std::ptrdiff_t>(dlcp::rendezvous::kStoreLengthPrefixBytes),
          frame.end()};
}

std::vector<std::byte> store_body(const dlcp::rendezvous::StoreResponse& response) {
  std::vector<std::byte> frame;
  dlcp::rendezvous::encode_store_response(response, frame);
  return {frame.begin() + static_cast<std::ptrdiff_t>(dlcp::rendezvous::kStoreLengthPrefixBytes),
          frame.end()};
}

void write_store_seeds(const fs::path& dir) {
  using namespace dlcp::rendezvous;
  fs::create_directories(dir);
  write_file(dir / "valid_set.bin", store_body(SetRequest{"rank/1/address", "10.0.0.2:40000"}));
  write_file(dir / "valid_set_empty.bin", store_body(SetRequest{"", ""}));
  write_file(dir / "valid_get.bin", store_body(GetRequest{"rank/0/address", 30000}));
  write_file(dir / "valid_add.bin", store_body(AddRequest{"barrier/0", -1}));
  write_file(dir / "valid_check.bin", store_body(CheckRequest{{"a", "b/c", ""}}));
  write_file(dir / "valid_wait.bin", store_body(WaitRequest{{"rank/0", "rank/1"}, 500}));
  write_file(dir / "valid_ok.bin", store_body(OkResponse{}));
  write_file(dir / "valid_value.bin", store_body(ValueResponse{"10.0.0.2:40000"}));
  write_file(dir / "valid_counter.bin", store_body(CounterResponse{-42}));
  write_file(dir / "valid_checked.bin", store_body(CheckedResponse{true}));
  write_file(dir / "valid_error.bin",
             store_body(ErrorResponse{StoreErrorKind::kDeadline, "store: timed out"}));

  auto bad = store_body(SetRequest{"k", "v"});
  bad[0] = std::byte{2};
  write_file(dir / "invalid_version.bin", bad);

  bad = store_body(SetRequest{"k", "v"});
  bad[1] = std::byte{0x42};
  write_file(dir / "invalid_type.bin", bad);

  bad = store_body(WaitRequest{{"rank/0", "rank/1"}, 500});
  bad.pop_back();
  write_file(dir / "invalid_truncated_wait.bin", bad);

  bad = store_body(SetRequest{"k", "v"});
  bad[2] = std::byte{0xFF};  // key length far above the limit
  write_file(dir / "invalid_key_length.bin", bad);

  bad = store_body(CheckRequest{{"a"}});
  bad[2] = bad[3] = bad[4] = bad[5] = std::byte{0};  // key count 0
  write_file(dir / "invalid_key_count.bin", bad);

  bad = store_body(CheckedResponse{true});
  bad[2] = std::byte{2};
  write_file(dir / "invalid_bool.bin", bad);

  bad = store_body(OkResponse{});
  bad.push_back(std::byte{0});
  write_file(dir / "invalid_trailing.bin", bad);
}

}  // namespace

// One collective's descriptors, as ps_descriptor_fuzz reads them.
std::vector<std::byte> descriptors_input(const std::vector<dlcp::collectives::PsDescriptor>& all) {
  std::vector<std::byte> bytes{static_cast<std::byte>(all.size() - 1)};
  for (const auto& d : all) {
    const auto words = dlcp::collectives::encode_descriptor(d);
    const auto* raw = reinterpret_cast<const std::byte*>(words.data());
    bytes.insert(bytes.end(), raw, raw + sizeof(words));
  }
  return bytes;
}

void write_ps_descriptor_seeds(const fs::path& dir) {
  using dlcp::collectives::PsDescriptor;
  fs::create_directories(dir);
  PsDescriptor flat;
  flat.shard_floats = 4096;
  flat.segment_floats = 1024;
  flat.num_layers = 4;
  flat.layer = 2;
  flat.loss_budget_ppm = 50000;
  flat.deadline_ms = 30000;
  write_file(dir / "valid_flat_two_workers.bin", descriptors_input({flat, flat}));
  // 2 hosts x 2 workers: each host's two leaders push its sums of stripes 0 and 1.
  PsDescriptor leader = flat;
  leader.stripes = 2;
  leader.contributions = 2;
  PsDescriptor second = leader;
  second.stripe = 1;
  write_file(dir / "valid_by_host.bin", descriptors_input({leader, second, leader, second}));
  // 3 workers on hosts a, a, b: stripe 0 only, host b's worker alone.
  PsDescriptor alone = flat;
  alone.contributions = 1;
  PsDescriptor host_a = flat;
  host_a.contributions = 2;
  PsDescriptor idle = flat;
  idle.stripe = dlcp::collectives::kNoStripe;
  idle.shard_floats = 0;
  idle.contributions = 0;
  write_file(dir / "valid_uneven_hosts.bin", descriptors_input({host_a, idle, alone}));
  PsDescriptor shutdown;
  shutdown.shutdown = true;
  write_file(dir / "valid_shutdown.bin", descriptors_input({shutdown, shutdown, shutdown}));
  write_file(dir / "invalid_counts_one_worker_twice.bin", descriptors_input({host_a, host_a}));
  PsDescriptor other_shard = second;
  other_shard.shard_floats = 2048;
  write_file(dir / "invalid_shard_disagrees.bin",
             descriptors_input({leader, second, leader, other_shard}));
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_ROOT\n", argv[0]);
    return 2;
  }
  const fs::path root(argv[1]);
  write_data_seeds(root / "data_header");
  write_control_seeds(root / "control");
  write_store_seeds(root / "store_protocol");
  write_ps_descriptor_seeds(root / "ps_descriptor");
  return 0;
}
