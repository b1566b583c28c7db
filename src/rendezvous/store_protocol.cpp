#include "rendezvous/store_protocol.hpp"

#include <cstring>
#include <limits>
#include <optional>
#include <type_traits>

#include "dlcp/error.hpp"
#include "rendezvous/store_value.hpp"
#include "wire/byte_order.hpp"

namespace dlcp::rendezvous {

namespace {

constexpr std::size_t kHeaderBytes = 2;  // version, type

// A store frame: length prefix (patched in by finish()), version, type, then fields.
class FrameWriter : public wire::ByteWriter {
 public:
  FrameWriter(std::vector<std::byte>& out, StoreFrameType type)
      : ByteWriter(out), start_(out.size()) {
    grow(kStoreLengthPrefixBytes);
    u8(kStoreProtocolVersion);
    u8(static_cast<std::uint8_t>(type));
  }

  void string(std::string_view s) {
    u32(static_cast<std::uint32_t>(s.size()));
    const std::size_t at = grow(s.size());
    // One block copy: values run to megabytes, and a per-byte loop crawls under sanitizers.
    if (!s.empty()) std::memcpy(bytes().data() + at, s.data(), s.size());
  }
  void finish() {
    const std::size_t body = bytes().size() - start_ - kStoreLengthPrefixBytes;
    wire::put_u32(std::span<std::byte>(bytes()).subspan(start_), 0,
                  static_cast<std::uint32_t>(body));
  }

 private:
  std::size_t start_;
};

// Reads fields from a body; every read checks the bounds first and reports kTruncated.
class FrameReader {
 public:
  explicit FrameReader(std::span<const std::byte> in) : in_(in) {}

  std::size_t remaining() const { return in_.size() - pos_; }

  std::optional<std::uint8_t> u8() {
    if (remaining() < 1) return std::nullopt;
    return wire::get_u8(in_, pos_++);
  }
  std::optional<std::uint32_t> u32() {
    if (remaining() < 4) return std::nullopt;
    const auto v = wire::get_u32(in_, pos_);
    pos_ += 4;
    return v;
  }
  std::optional<std::uint64_t> u64() {
    if (remaining() < 8) return std::nullopt;
    const auto v = wire::get_u64(in_, pos_);
    pos_ += 8;
    return v;
  }
  // A string of at most `limit` bytes; the length is checked before anything is copied.
  Expected<std::string, StoreDecodeError> string(std::size_t limit, StoreDecodeError too_long) {
    const auto length = u32();
    if (!length) return unexpected(StoreDecodeError::kTruncated);
    if (*length > limit) return unexpected(too_long);
    if (remaining() < *length) return unexpected(StoreDecodeError::kTruncated);
    std::string s(reinterpret_cast<const char*>(in_.data() + pos_), *length);
    pos_ += *length;
    return s;
  }
  Expected<std::vector<std::string>, StoreDecodeError> key_list() {
    const auto count = u32();
    if (!count) return unexpected(StoreDecodeError::kTruncated);
    if (*count == 0 || *count > kMaxStoreKeysPerRequest) {
      return unexpected(StoreDecodeError::kTooManyKeys);
    }
    // Every key takes at least its 4-byte length: refuse impossible counts before reserving.
    if (remaining() / 4 < *count) return unexpected(StoreDecodeError::kTruncated);
    std::vector<std::string> keys;
    keys.reserve(*count);
    for (std::uint32_t i = 0; i < *count; ++i) {
      auto key = string(kMaxStoreKeyBytes, StoreDecodeError::kKeyTooLong);
      if (!key) return unexpected(key.error());
      keys.push_back(std::move(*key));
    }
    return keys;
  }

 private:
  std::span<const std::byte> in_;
  std::size_t pos_ = 0;
};

std::uint32_t checked_key_count(const std::vector<std::string>& keys) {
  check_key_list(keys);
  return static_cast<std::uint32_t>(keys.size());
}

// Completes a decoded message: no bytes may follow the last field.
template <class T>
Expected<T, StoreDecodeError> finished(const FrameReader& reader, T value) {
  if (reader.remaining() != 0) return unexpected(StoreDecodeError::kTrailingBytes);
  return value;
}

Expected<StoreRequest, StoreDecodeError> decode_request_fields(StoreFrameType type,
                                                               FrameReader& reader) {
  using E = Expected<StoreRequest, StoreDecodeError>;
  switch (type) {
    case StoreFrameType::kSet: {
      auto key = reader.string(kMaxStoreKeyBytes, StoreDecodeError::kKeyTooLong);
      if (!key) return unexpected(key.error());
      auto value = reader.string(kMaxStoreValueBytes, StoreDecodeError::kValueTooLong);
      if (!value) return unexpected(value.error());
      return finished<StoreRequest>(reader, SetRequest{std::move(*key), std::move(*value)});
    }
    case StoreFrameType::kGet: {
      auto key = reader.string(kMaxStoreKeyBytes, StoreDecodeError::kKeyTooLong);
      if (!key) return unexpected(key.error());
      const auto timeout = reader.u32();
      if (!timeout) return unexpected(StoreDecodeError::kTruncated);
      return finished<StoreRequest>(reader, GetRequest{std::move(*key), *timeout});
    }
    case StoreFrameType::kAdd: {
      auto key = reader.string(kMaxStoreKeyBytes, StoreDecodeError::kKeyTooLong);
      if (!key) return unexpected(key.error());
      const auto delta = reader.u64();
      if (!delta) return unexpected(StoreDecodeError::kTruncated);
      return finished<StoreRequest>(reader,
                                    AddRequest{std::move(*key), static_cast<std::int64_t>(*delta)});
    }
    case StoreFrameType::kCheck: {
      auto keys = reader.key_list();
      if (!keys) return unexpected(keys.error());
      return finished<StoreRequest>(reader, CheckRequest{std::move(*keys)});
    }
    case StoreFrameType::kWait: {
      auto keys = reader.key_list();
      if (!keys) return unexpected(keys.error());
      const auto timeout = reader.u32();
      if (!timeout) return unexpected(StoreDecodeError::kTruncated);
      return finished<StoreRequest>(reader, WaitRequest{std::move(*keys), *timeout});
    }
    default:
      return E(unexpected(StoreDecodeError::kBadType));
  }
}

Expected<StoreResponse, StoreDecodeError> decode_response_fields(StoreFrameType type,
                                                                 FrameReader& reader) {
  switch (type) {
    case StoreFrameType::kOk:
      return finished<StoreResponse>(reader, OkResponse{});
    case StoreFrameType::kValue: {
      auto value = reader.string(kMaxStoreValueBytes, StoreDecodeError::kValueTooLong);
      if (!value) return unexpected(value.error());
      return finished<StoreResponse>(reader, ValueResponse{std::move(*value)});
    }
    case StoreFrameType::kCounter: {
      const auto value = reader.u64();
      if (!value) return unexpected(StoreDecodeError::kTruncated);
      return finished<StoreResponse>(reader, CounterResponse{static_cast<std::int64_t>(*value)});
    }
    case StoreFrameType::kChecked: {
      const auto present = reader.u8();
      if (!present) return unexpected(StoreDecodeError::kTruncated);
      if (*present > 1) return unexpected(StoreDecodeError::kBadField);
      return finished<StoreResponse>(reader, CheckedResponse{*present == 1});
    }
    case StoreFrameType::kError: {
      const auto kind = reader.u8();
      if (!kind) return unexpected(StoreDecodeError::kTruncated);
      if (*kind < static_cast<std::uint8_t>(StoreErrorKind::kDeadline) ||
          *kind > static_cast<std::uint8_t>(StoreErrorKind::kProtocol)) {
        return unexpected(StoreDecodeError::kBadField);
      }
      auto message = reader.string(kMaxStoreErrorMessageBytes, StoreDecodeError::kBadField);
      if (!message) return unexpected(message.error());
      return finished<StoreResponse>(
          reader, ErrorResponse{static_cast<StoreErrorKind>(*kind), std::move(*message)});
    }
    default:
      return unexpected(StoreDecodeError::kBadType);
  }
}

// Version and type, common to both directions.
Expected<StoreFrameType, StoreDecodeError> decode_header(FrameReader& reader) {
  const auto version = reader.u8();
  if (!version) return unexpected(StoreDecodeError::kTruncated);
  if (*version != kStoreProtocolVersion) return unexpected(StoreDecodeError::kBadVersion);
  const auto type = reader.u8();
  if (!type) return unexpected(StoreDecodeError::kTruncated);
  return static_cast<StoreFrameType>(*type);
}

}  // namespace

std::string_view to_string(StoreDecodeError error) {
  switch (error) {
    case StoreDecodeError::kBadLength:
      return "bad frame length";
    case StoreDecodeError::kTruncated:
      return "truncated frame";
    case StoreDecodeError::kTrailingBytes:
      return "trailing bytes after the last field";
    case StoreDecodeError::kBadVersion:
      return "unknown protocol version";
    case StoreDecodeError::kBadType:
      return "unknown frame type";
    case StoreDecodeError::kKeyTooLong:
      return "key too long";
    case StoreDecodeError::kValueTooLong:
      return "value too long";
    case StoreDecodeError::kTooManyKeys:
      return "key count 0 or too large";
    case StoreDecodeError::kBadField:
      return "field out of range";
  }
  return "unknown decode error";
}

void check_key(const std::string& key) {
  if (key.size() > kMaxStoreKeyBytes) {
    throw Error(ErrorCode::kInvalidArgument, -1,
                "store: key " + quote_key(key) + " is " + std::to_string(key.size()) +
                    " bytes, above the limit of " + std::to_string(kMaxStoreKeyBytes));
  }
}

void check_value(const std::string& key, const std::string& value) {
  if (value.size() > kMaxStoreValueBytes) {
    throw Error(ErrorCode::kInvalidArgument, -1,
                "store: value for key " + quote_key(key) + " is " + std::to_string(value.size()) +
                    " bytes, above the limit of " + std::to_string(kMaxStoreValueBytes));
  }
}

void check_key_list(const std::vector<std::string>& keys) {
  if (keys.empty() || keys.size() > kMaxStoreKeysPerRequest) {
    throw Error(ErrorCode::kInvalidArgument, -1,
                "store: a request names " + std::to_string(keys.size()) +
                    " keys; it must name 1 to " + std::to_string(kMaxStoreKeysPerRequest));
  }
  std::size_t total = 0;
  for (const auto& key : keys) {
    check_key(key);
    total += 4 + key.size();
  }
  if (total + 16 > kMaxStoreFrameBytes) {
    throw Error(ErrorCode::kInvalidArgument, -1,
                "store: the key list " + describe_keys(keys) + " does not fit in one frame");
  }
}

void encode_store_request(const StoreRequest& request, std::vector<std::byte>& out) {
  std::visit(
      [&out](const auto& r) {
        using T = std::decay_t<decltype(r)>;
        if constexpr (std::is_same_v<T, SetRequest>) {
          check_key(r.key);
          check_value(r.key, r.value);
          FrameWriter w(out, StoreFrameType::kSet);
          w.string(r.key);
          w.string(r.value);
          w.finish();
        } else if constexpr (std::is_same_v<T, GetRequest>) {
          check_key(r.key);
          FrameWriter w(out, StoreFrameType::kGet);
          w.string(r.key);
          w.u32(r.timeout_ms);
          w.finish();
        } else if constexpr (std::is_same_v<T, AddRequest>) {
          check_key(r.key);
          FrameWriter w(out, StoreFrameType::kAdd);
          w.string(r.key);
          w.u64(static_cast<std::uint64_t>(r.delta));
          w.finish();
        } else if constexpr (std::is_same_v<T, CheckRequest>) {
          const std::uint32_t count = checked_key_count(r.keys);  // before writing anything
          FrameWriter w(out, StoreFrameType::kCheck);
          w.u32(count);
          for (const auto& key : r.keys) w.string(key);
          w.finish();
        } else {
          static_assert(std::is_same_v<T, WaitRequest>);
          const std::uint32_t count = checked_key_count(r.keys);  // before writing anything
          FrameWriter w(out, StoreFrameType::kWait);
          w.u32(count);
          for (const auto& key : r.keys) w.string(key);
          w.u32(r.timeout_ms);
          w.finish();
        }
      },
      request);
}

void encode_store_response(const StoreResponse& response, std::vector<std::byte>& out) {
  std::visit(
      [&out](const auto& r) {
        using T = std::decay_t<decltype(r)>;
        if constexpr (std::is_same_v<T, OkResponse>) {
          FrameWriter w(out, StoreFrameType::kOk);
          w.finish();
        } else if constexpr (std::is_same_v<T, ValueResponse>) {
          check_value("(response)", r.value);
          FrameWriter w(out, StoreFrameType::kValue);
          w.string(r.value);
          w.finish();
        } else if constexpr (std::is_same_v<T, CounterResponse>) {
          FrameWriter w(out, StoreFrameType::kCounter);
          w.u64(static_cast<std::uint64_t>(r.value));
          w.finish();
        } else if constexpr (std::is_same_v<T, CheckedResponse>) {
          FrameWriter w(out, StoreFrameType::kChecked);
          w.u8(r.all_present ? 1 : 0);
          w.finish();
        } else {
          static_assert(std::is_same_v<T, ErrorResponse>);
          FrameWriter w(out, StoreFrameType::kError);
          w.u8(static_cast<std::uint8_t>(r.kind));
          w.string(std::string_view(r.message).substr(0, kMaxStoreErrorMessageBytes));
          w.finish();
        }
      },
      response);
}

Expected<std::uint32_t, StoreDecodeError> decode_store_frame_length(
    std::span<const std::byte> prefix) {
  if (prefix.size() < kStoreLengthPrefixBytes) return unexpected(StoreDecodeError::kTruncated);
  const std::uint32_t length = wire::get_u32(prefix, 0);
  if (length < kHeaderBytes || length > kMaxStoreFrameBytes) {
    return unexpected(StoreDecodeError::kBadLength);
  }
  return length;
}

Expected<StoreRequest, StoreDecodeError> decode_store_request(std::span<const std::byte> body) {
  if (body.size() > kMaxStoreFrameBytes) return unexpected(StoreDecodeError::kBadLength);
  FrameReader reader(body);
  const auto type = decode_header(reader);
  if (!type) return unexpected(type.error());
  return decode_request_fields(*type, reader);
}

Expected<StoreResponse, StoreDecodeError> decode_store_response(std::span<const std::byte> body) {
  if (body.size() > kMaxStoreFrameBytes) return unexpected(StoreDecodeError::kBadLength);
  FrameReader reader(body);
  const auto type = decode_header(reader);
  if (!type) return unexpected(type.error());
  return decode_response_fields(*type, reader);
}

std::string describe_request(const StoreRequest& request) {
  return std::visit(
      [](const auto& r) -> std::string {
        using T = std::decay_t<decltype(r)>;
        if constexpr (std::is_same_v<T, SetRequest>) {
          return "SET " + quote_key(r.key);
        } else if constexpr (std::is_same_v<T, GetRequest>) {
          return "GET " + quote_key(r.key);
        } else if constexpr (std::is_same_v<T, AddRequest>) {
          return "ADD " + quote_key(r.key);
        } else if constexpr (std::is_same_v<T, CheckRequest>) {
          return "CHECK " + describe_keys(r.keys);
        } else {
          return "WAIT " + describe_keys(r.keys);
        }
      },
      request);
}

}  // namespace dlcp::rendezvous
