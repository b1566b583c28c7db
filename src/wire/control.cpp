#include "wire/control.hpp"

#include <algorithm>
#include <bit>
#include <cassert>
#include <limits>
#include <type_traits>

#include "wire/byte_order.hpp"
#include "wire/data_header.hpp"

namespace dlcp::wire {

namespace {

constexpr std::uint8_t kControlVersion = 1;

// Fixed part of each message body after the version and type bytes.
constexpr std::size_t kHelloFixedBytes = 8 + 2 + 2 + 1;
constexpr std::size_t kHelloSocketBytes = 4 + 2;
constexpr std::size_t kFlowStartFixedBytes = 8 + 4 + 2 + 1 + 1 + 4 + 4 + 4;
constexpr std::size_t kRoundFinishedBytes = 8 + 2 + 4;
constexpr std::size_t kMissingRangesFixedBytes = 8 + 2 + 4;
constexpr std::size_t kRangeBytes = 4 + 4;
constexpr std::size_t kStopBytes = 8 + 1 + 4 + 4;
constexpr std::size_t kRateFeedbackFixedBytes = 4 + 8 + 4 + 4 + 4 + 4 + 8 + 1;
constexpr std::size_t kPathCounterBytes = 4;

constexpr std::uint32_t kMaxLossBudgetPpm = 1'000'000;
constexpr std::uint8_t kMaxStopReason = static_cast<std::uint8_t>(StopReason::kAborted);

using Writer = ByteWriter;

// Reads big-endian fields from a body. Callers check remaining() before reading; the byte-order
// helpers assert the bounds as a second line of defence.
class Reader {
 public:
  explicit Reader(std::span<const std::byte> in) : in_(in) {}

  std::size_t remaining() const { return in_.size() - pos_; }

  std::uint8_t u8() { return advance(get_u8(in_, pos_), 1); }
  std::uint16_t u16() { return advance(get_u16(in_, pos_), 2); }
  std::uint32_t u32() { return advance(get_u32(in_, pos_), 4); }
  std::uint64_t u64() { return advance(get_u64(in_, pos_), 8); }

 private:
  template <class T>
  T advance(T value, std::size_t n) {
    pos_ += n;
    return value;
  }

  std::span<const std::byte> in_;
  std::size_t pos_ = 0;
};

void encode_fields(const Hello& m, Writer& w) {
  assert(m.data_sockets.size() <= std::numeric_limits<std::uint8_t>::max());
  w.u64(m.job_token);
  w.u16(m.rank);
  w.u16(m.world_size);
  w.u8(static_cast<std::uint8_t>(m.data_sockets.size()));
  for (const DataAddress& a : m.data_sockets) {
    w.u32(a.ipv4);
    w.u16(a.port);
  }
  for (const std::uint8_t b : m.nonce) w.u8(b);
  w.u8(m.features);
  if ((m.features & hello_features::kLocalPath) != 0) {
    assert(!m.local_socket.empty() && m.local_socket.size() <= kMaxLocalSocketName);
    for (const std::uint8_t b : m.host_identity) w.u8(b);
    w.u8(static_cast<std::uint8_t>(m.local_socket.size()));
    for (const char c : m.local_socket) w.u8(static_cast<std::uint8_t>(c));
  }
}

void encode_fields(const FlowStart& m, Writer& w) {
  w.u64(m.message_id);
  w.u32(m.total_floats);
  w.u16(m.stride_floats);
  w.u8(m.priority_class);
  w.u8(m.parity_members);
  w.u32(m.loss_budget_ppm);
  w.u32(m.packet_count);
  w.u32(m.protected_count);
  for (const std::uint8_t b : m.protected_bitmap) w.u8(b);
}

void encode_fields(const RoundFinished& m, Writer& w) {
  w.u64(m.message_id);
  w.u16(m.round);
  w.u32(m.packets_sent);
}

void encode_fields(const MissingRanges& m, Writer& w) {
  assert(m.ranges.size() <= std::numeric_limits<std::uint32_t>::max());
  w.u64(m.message_id);
  w.u16(m.round);
  w.u32(static_cast<std::uint32_t>(m.ranges.size()));
  for (const SeqRange& r : m.ranges) {
    w.u32(r.first);
    w.u32(r.count);
  }
}

void encode_fields(const Stop& m, Writer& w) {
  w.u64(m.message_id);
  w.u8(static_cast<std::uint8_t>(m.reason));
  w.u32(m.packets_received);
  w.u32(m.packets_missing);
}

void encode_fields(const Abort& m, Writer& w) {
  const std::size_t length = std::min(m.reason.size(), kMaxAbortReasonBytes);
  w.u16(static_cast<std::uint16_t>(length));
  for (std::size_t i = 0; i < length; ++i) {
    const auto c = static_cast<unsigned char>(m.reason[i]);
    w.u8(c >= 0x20 && c < 0x7F ? c : static_cast<std::uint8_t>('?'));
  }
}

void encode_fields(const Goodbye& /*m*/, Writer& /*w*/) {}

void encode_fields(const Authenticate& m, Writer& w) {
  for (const std::uint8_t b : m.proof) w.u8(b);
}

void encode_fields(const RateFeedback& m, Writer& w) {
  assert(m.path_received.size() <= std::numeric_limits<std::uint8_t>::max());
  w.u32(m.interval_us);
  w.u64(m.received_bytes);
  w.u32(m.received_packets);
  w.u32(m.lost_packets_estimate);
  w.u32(m.ce_marked_packets);
  w.u32(m.ce_marked_shared_band);
  w.u64(m.offered_rate);
  w.u8(static_cast<std::uint8_t>(m.path_received.size()));
  for (const std::uint32_t n : m.path_received) w.u32(n);
}

template <class T>
constexpr ControlType type_of() {
  if constexpr (std::is_same_v<T, Hello>) return ControlType::kHello;
  if constexpr (std::is_same_v<T, FlowStart>) return ControlType::kFlowStart;
  if constexpr (std::is_same_v<T, RoundFinished>) return ControlType::kRoundFinished;
  if constexpr (std::is_same_v<T, MissingRanges>) return ControlType::kMissingRanges;
  if constexpr (std::is_same_v<T, Stop>) return ControlType::kStop;
  if constexpr (std::is_same_v<T, RateFeedback>) return ControlType::kRateFeedback;
  if constexpr (std::is_same_v<T, Abort>) return ControlType::kAbort;
  if constexpr (std::is_same_v<T, Goodbye>) return ControlType::kGoodbye;
  if constexpr (std::is_same_v<T, Authenticate>) return ControlType::kAuthenticate;
}

using Decoded = Expected<ControlMessage, RejectReason>;

Decoded reject(RejectReason reason) {
  return unexpected(reason);
}

// Each decoder first checks that the body length agrees with the type and its count fields
// (kBadControlLength), and only then validates field values (kBadControlField). Nothing is
// allocated before the length check, so a count field can never request more memory than the
// bytes actually present justify.

Decoded decode_hello(Reader& r) {
  if (r.remaining() < kHelloFixedBytes) return reject(RejectReason::kBadControlLength);
  Hello m;
  m.job_token = r.u64();
  m.rank = r.u16();
  m.world_size = r.u16();
  const std::uint8_t socket_count = r.u8();
  const std::size_t addresses_bytes = std::size_t{socket_count} * kHelloSocketBytes;
  if (r.remaining() < addresses_bytes + kNonceBytes + 1) {
    return reject(RejectReason::kBadControlLength);
  }
  if (socket_count == 0 || socket_count > kMaxDataPorts || m.world_size == 0 ||
      m.rank >= m.world_size) {
    return reject(RejectReason::kBadControlField);
  }
  m.data_sockets.reserve(socket_count);
  for (std::uint8_t i = 0; i < socket_count; ++i) {
    DataAddress a;
    a.ipv4 = r.u32();
    a.port = r.u16();
    m.data_sockets.push_back(a);
  }
  for (std::uint8_t& b : m.nonce) b = r.u8();
  m.features = r.u8();
  if ((m.features & ~hello_features::kAllKnown) != 0) return reject(RejectReason::kBadControlField);
  if ((m.features & hello_features::kLocalPath) == 0) {
    if (r.remaining() != 0) return reject(RejectReason::kBadControlLength);
    return ControlMessage{std::move(m)};
  }
  if (r.remaining() < kHostIdentityBytes + 1) return reject(RejectReason::kBadControlLength);
  for (std::uint8_t& b : m.host_identity) b = r.u8();
  const std::uint8_t name_bytes = r.u8();
  if (r.remaining() != name_bytes) return reject(RejectReason::kBadControlLength);
  if (name_bytes == 0 || name_bytes > kMaxLocalSocketName) {
    return reject(RejectReason::kBadControlField);
  }
  for (std::uint8_t i = 0; i < name_bytes; ++i) m.local_socket.push_back(static_cast<char>(r.u8()));
  return ControlMessage{std::move(m)};
}

Decoded decode_flow_start(Reader& r) {
  if (r.remaining() < kFlowStartFixedBytes) return reject(RejectReason::kBadControlLength);
  FlowStart m;
  m.message_id = r.u64();
  m.total_floats = r.u32();
  m.stride_floats = r.u16();
  m.priority_class = r.u8();
  m.parity_members = r.u8();
  m.loss_budget_ppm = r.u32();
  m.packet_count = r.u32();
  m.protected_count = r.u32();
  const std::uint64_t bitmap_bytes = (std::uint64_t{m.packet_count} + 7) / 8;
  if (r.remaining() != bitmap_bytes) return reject(RejectReason::kBadControlLength);

  if (m.stride_floats == 0 || m.total_floats == 0 ||
      m.packet_count != packet_count(m.total_floats, m.stride_floats) ||
      m.loss_budget_ppm > kMaxLossBudgetPpm || m.priority_class >= kPriorityClasses) {
    return reject(RejectReason::kBadControlField);
  }

  // Safe: bitmap_bytes equals the number of bytes left in a body of bounded size.
  m.protected_bitmap.resize(static_cast<std::size_t>(bitmap_bytes));
  std::uint64_t population = 0;
  for (std::uint8_t& b : m.protected_bitmap) {
    b = r.u8();
    population += static_cast<std::uint64_t>(std::popcount(b));
  }
  const std::uint32_t bits_in_last = m.packet_count % 8;
  if (bits_in_last != 0) {
    const auto used_mask = static_cast<std::uint8_t>((1u << bits_in_last) - 1u);
    if ((m.protected_bitmap.back() & ~used_mask) != 0) {
      return reject(RejectReason::kBadControlField);
    }
  }
  if (population != m.protected_count) return reject(RejectReason::kBadControlField);
  return ControlMessage{std::move(m)};
}

Decoded decode_round_finished(Reader& r) {
  if (r.remaining() != kRoundFinishedBytes) return reject(RejectReason::kBadControlLength);
  RoundFinished m;
  m.message_id = r.u64();
  m.round = r.u16();
  m.packets_sent = r.u32();
  return ControlMessage{m};
}

Decoded decode_missing_ranges(Reader& r) {
  if (r.remaining() < kMissingRangesFixedBytes) return reject(RejectReason::kBadControlLength);
  MissingRanges m;
  m.message_id = r.u64();
  m.round = r.u16();
  const std::uint32_t range_count = r.u32();
  if (r.remaining() != std::uint64_t{range_count} * kRangeBytes) {
    return reject(RejectReason::kBadControlLength);
  }
  // Safe: range_count * kRangeBytes equals the bytes left in a body of bounded size.
  m.ranges.reserve(range_count);
  std::uint64_t previous_end = 0;
  for (std::uint32_t i = 0; i < range_count; ++i) {
    SeqRange range;
    range.first = r.u32();
    range.count = r.u32();
    const std::uint64_t end = std::uint64_t{range.first} + range.count;
    if (range.count == 0 || end > std::numeric_limits<std::uint32_t>::max() ||
        (i > 0 && range.first < previous_end)) {
      return reject(RejectReason::kBadControlField);
    }
    previous_end = end;
    m.ranges.push_back(range);
  }
  return ControlMessage{std::move(m)};
}

Decoded decode_stop(Reader& r) {
  if (r.remaining() != kStopBytes) return reject(RejectReason::kBadControlLength);
  Stop m;
  m.message_id = r.u64();
  const std::uint8_t reason = r.u8();
  m.packets_received = r.u32();
  m.packets_missing = r.u32();
  if (reason > kMaxStopReason) return reject(RejectReason::kBadControlField);
  m.reason = static_cast<StopReason>(reason);
  return ControlMessage{m};
}

Decoded decode_rate_feedback(Reader& r) {
  if (r.remaining() < kRateFeedbackFixedBytes) return reject(RejectReason::kBadControlLength);
  RateFeedback m;
  m.interval_us = r.u32();
  m.received_bytes = r.u64();
  m.received_packets = r.u32();
  m.lost_packets_estimate = r.u32();
  m.ce_marked_packets = r.u32();
  m.ce_marked_shared_band = r.u32();
  m.offered_rate = r.u64();
  const std::uint8_t path_count = r.u8();
  if (r.remaining() != std::size_t{path_count} * kPathCounterBytes) {
    return reject(RejectReason::kBadControlLength);
  }
  if (path_count > kMaxDataPorts || m.ce_marked_shared_band > m.ce_marked_packets) {
    return reject(RejectReason::kBadControlField);
  }
  m.path_received.reserve(path_count);
  for (std::uint8_t i = 0; i < path_count; ++i) m.path_received.push_back(r.u32());
  return ControlMessage{std::move(m)};
}

Decoded decode_abort(Reader& r) {
  if (r.remaining() < 2) return reject(RejectReason::kBadControlLength);
  const std::uint16_t length = r.u16();
  if (r.remaining() != length) return reject(RejectReason::kBadControlLength);
  if (length > kMaxAbortReasonBytes) return reject(RejectReason::kBadControlField);
  Abort m;
  m.reason.reserve(length);
  for (std::uint16_t i = 0; i < length; ++i) {
    const std::uint8_t c = r.u8();
    // The reason ends up in error messages and logs: only printable ASCII is accepted.
    if (c < 0x20 || c >= 0x7F) return reject(RejectReason::kBadControlField);
    m.reason.push_back(static_cast<char>(c));
  }
  return ControlMessage{std::move(m)};
}

}  // namespace

void encode_control(const ControlMessage& message, std::vector<std::byte>& out) {
  const std::size_t start = out.size();
  Writer w(out);
  w.u32(0);  // body length, patched below
  w.u8(kControlVersion);
  std::visit(
      [&w](const auto& m) {
        w.u8(static_cast<std::uint8_t>(type_of<std::decay_t<decltype(m)>>()));
        encode_fields(m, w);
      },
      message);
  const std::size_t body_bytes = out.size() - start - kControlLengthPrefixBytes;
  assert(body_bytes <= kMaxControlFrameBytes);
  put_u32(out, start, static_cast<std::uint32_t>(body_bytes));
}

Expected<std::uint32_t, RejectReason> decode_control_length(std::span<const std::byte> prefix) {
  if (prefix.size() < kControlLengthPrefixBytes) return unexpected(RejectReason::kBadControlLength);
  const std::uint32_t length = get_u32(prefix, 0);
  if (length == 0 || length > kMaxControlFrameBytes) {
    return unexpected(RejectReason::kBadControlLength);
  }
  return length;
}

Expected<ControlMessage, RejectReason> decode_control_body(std::span<const std::byte> body) {
  if (body.empty() || body.size() > kMaxControlFrameBytes) {
    return reject(RejectReason::kBadControlLength);
  }
  Reader r(body);
  if (r.u8() != kControlVersion) return reject(RejectReason::kBadVersion);
  if (r.remaining() == 0) return reject(RejectReason::kBadControlLength);
  switch (static_cast<ControlType>(r.u8())) {
    case ControlType::kHello:
      return decode_hello(r);
    case ControlType::kFlowStart:
      return decode_flow_start(r);
    case ControlType::kRoundFinished:
      return decode_round_finished(r);
    case ControlType::kMissingRanges:
      return decode_missing_ranges(r);
    case ControlType::kStop:
      return decode_stop(r);
    case ControlType::kRateFeedback:
      return decode_rate_feedback(r);
    case ControlType::kAbort:
      return decode_abort(r);
    case ControlType::kGoodbye:
      if (r.remaining() != 0) return reject(RejectReason::kBadControlLength);
      return ControlMessage{Goodbye{}};
    case ControlType::kAuthenticate: {
      if (r.remaining() != kProofBytes) return reject(RejectReason::kBadControlLength);
      Authenticate m;
      for (std::uint8_t& b : m.proof) b = r.u8();
      return ControlMessage{m};
    }
  }
  return reject(RejectReason::kBadControlType);
}

}  // namespace dlcp::wire
