// libFuzzer target for the TcpStore codec. The input is one frame body (everything after the
// length prefix), tried both as a request and as a response; its first four bytes are also read
// as a length prefix. Every accepted body must re-encode to exactly the same bytes (the encoding
// is canonical) and decode again to the same value.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

#include "rendezvous/store_protocol.hpp"

namespace {

using namespace dlcp::rendezvous;

void check(bool ok) {
  if (!ok) std::abort();
}

void check_reencodes(std::span<const std::byte> input, const std::vector<std::byte>& frame) {
  check(frame.size() == kStoreLengthPrefixBytes + input.size());
  const auto length = decode_store_frame_length(frame);
  check(length.has_value() && *length == input.size());
  const auto body = std::span<const std::byte>(frame).subspan(kStoreLengthPrefixBytes);
  for (std::size_t i = 0; i < input.size(); ++i) check(body[i] == input[i]);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::byte> input(reinterpret_cast<const std::byte*>(data), size);

  if (size >= kStoreLengthPrefixBytes) {
    const auto length = decode_store_frame_length(input);
    check(!length || (*length >= 2 && *length <= kMaxStoreFrameBytes));
  }

  if (const auto request = decode_store_request(input)) {
    std::vector<std::byte> frame;
    encode_store_request(*request, frame);
    check_reencodes(input, frame);
    const auto again = decode_store_request(std::span<const std::byte>(frame).subspan(4));
    check(again.has_value() && *again == *request);
    check(!describe_request(*request).empty());
  }

  if (const auto response = decode_store_response(input)) {
    std::vector<std::byte> frame;
    encode_store_response(*response, frame);
    check_reencodes(input, frame);
    const auto again = decode_store_response(std::span<const std::byte>(frame).subspan(4));
    check(again.has_value() && *again == *response);
  }
  return 0;
}
