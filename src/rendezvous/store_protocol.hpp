// Wire protocol of TcpStore: one request frame from the client, one response frame back.
//
// Framing: u32 body_length (big-endian, counts everything after itself), u8 version, u8 type,
// then the type's fields, big-endian. Strings are u32 length + bytes. A frame whose length is 0
// or above kMaxStoreFrameBytes is refused before anything is buffered. The layouts are listed
// next to each struct below and in docs/rendezvous.md. Client and server both use this codec.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/expected.hpp"

namespace dlcp::rendezvous {

inline constexpr std::uint8_t kStoreProtocolVersion = 1;
inline constexpr std::size_t kStoreLengthPrefixBytes = 4;
inline constexpr std::size_t kMaxStoreKeyBytes = 4096;
inline constexpr std::size_t kMaxStoreValueBytes = 64u << 20;
// CHECK and WAIT name at most this many keys (a world of 64 Ki ranks, one key each).
inline constexpr std::size_t kMaxStoreKeysPerRequest = 65536;
inline constexpr std::size_t kMaxStoreErrorMessageBytes = 16384;
// The largest body any valid frame has: a SET of the largest key and value, plus a little.
inline constexpr std::size_t kMaxStoreFrameBytes = kMaxStoreValueBytes + kMaxStoreKeyBytes + 64;

enum class StoreFrameType : std::uint8_t {
  kSet = 1,
  kGet = 2,
  kAdd = 3,
  kCheck = 4,
  kWait = 5,
  kOk = 0x81,
  kValue = 0x82,
  kCounter = 0x83,
  kChecked = 0x84,
  kError = 0x85,
};

// Requests.
//   SET:   string key, string value
//   GET:   string key, u32 timeout_ms         -- answered with VALUE once the key exists
//   ADD:   string key, i64 delta (two's complement) -- answered with COUNTER
//   CHECK: u32 key_count, key_count x string key  -- answered with CHECKED
//   WAIT:  u32 key_count, key_count x string key, u32 timeout_ms -- answered with OK
// GET and WAIT block on the server, not on the connection: the server answers when the keys
// appear, or with ERROR(kDeadline) after timeout_ms.
struct SetRequest {
  std::string key;
  std::string value;
  bool operator==(const SetRequest&) const = default;
};
struct GetRequest {
  std::string key;
  std::uint32_t timeout_ms = 0;
  bool operator==(const GetRequest&) const = default;
};
struct AddRequest {
  std::string key;
  std::int64_t delta = 0;
  bool operator==(const AddRequest&) const = default;
};
struct CheckRequest {
  std::vector<std::string> keys;
  bool operator==(const CheckRequest&) const = default;
};
struct WaitRequest {
  std::vector<std::string> keys;
  std::uint32_t timeout_ms = 0;
  bool operator==(const WaitRequest&) const = default;
};
using StoreRequest = std::variant<SetRequest, GetRequest, AddRequest, CheckRequest, WaitRequest>;

// Responses.
//   OK:      (no fields)                 -- after SET and WAIT
//   VALUE:   string value                -- after GET
//   COUNTER: i64 value                   -- after ADD
//   CHECKED: u8 all_present (0 or 1)     -- after CHECK
//   ERROR:   u8 kind, string message     -- after any request that failed
enum class StoreErrorKind : std::uint8_t {
  kDeadline = 1,         // GET/WAIT timed out
  kInvalidArgument = 2,  // ADD on a value that is not a counter, ...
  kProtocol = 3,         // the request was malformed; the server closes the connection
};
struct OkResponse {
  bool operator==(const OkResponse&) const = default;
};
struct ValueResponse {
  std::string value;
  bool operator==(const ValueResponse&) const = default;
};
struct CounterResponse {
  std::int64_t value = 0;
  bool operator==(const CounterResponse&) const = default;
};
struct CheckedResponse {
  bool all_present = false;
  bool operator==(const CheckedResponse&) const = default;
};
struct ErrorResponse {
  StoreErrorKind kind = StoreErrorKind::kProtocol;
  std::string message;
  bool operator==(const ErrorResponse&) const = default;
};
using StoreResponse =
    std::variant<OkResponse, ValueResponse, CounterResponse, CheckedResponse, ErrorResponse>;

enum class StoreDecodeError : std::uint8_t {
  kBadLength,      // length prefix 0 or above kMaxStoreFrameBytes
  kTruncated,      // the body ends inside a field
  kTrailingBytes,  // bytes left after the last field
  kBadVersion,     // unknown protocol version
  kBadType,        // unknown type, or a response where a request belongs (and vice versa)
  kKeyTooLong,     // key above kMaxStoreKeyBytes
  kValueTooLong,   // value above kMaxStoreValueBytes
  kTooManyKeys,    // CHECK/WAIT key_count 0 or above kMaxStoreKeysPerRequest
  kBadField,       // a field outside its range (bool not 0/1, unknown error kind, ...)
};
std::string_view to_string(StoreDecodeError error);

// Encode one whole frame, length prefix included, appending to out. Throws
// dlcp::Error(kInvalidArgument) naming the key when a key, value or key list exceeds its limit
// (check_key / check_value let callers find out earlier). Error messages longer than the limit
// are cut, never refused.
void encode_store_request(const StoreRequest& request, std::vector<std::byte>& out);
void encode_store_response(const StoreResponse& response, std::vector<std::byte>& out);

// Throw dlcp::Error(kInvalidArgument) naming the key when it breaks a limit.
void check_key(const std::string& key);
void check_value(const std::string& key, const std::string& value);
void check_key_list(const std::vector<std::string>& keys);

// Reads a length prefix whose first kStoreLengthPrefixBytes bytes are available.
Expected<std::uint32_t, StoreDecodeError> decode_store_frame_length(
    std::span<const std::byte> prefix);

// Decode one frame body (everything after the length prefix), validating every field. They
// never throw (apart from std::bad_alloc) and never read outside `body`.
Expected<StoreRequest, StoreDecodeError> decode_store_request(std::span<const std::byte> body);
Expected<StoreResponse, StoreDecodeError> decode_store_response(std::span<const std::byte> body);

// "SET 'key'", "WAIT 'a', 'b'": for error messages.
std::string describe_request(const StoreRequest& request);

}  // namespace dlcp::rendezvous
