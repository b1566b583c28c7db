#include "api/job_secret.hpp"

#include "dlcp/error.hpp"
#include "transport/job_key.hpp"

namespace dlcp::api {

std::vector<std::uint8_t> parse_job_secret(const std::string& hex) {
  const auto bytes = transport::parse_hex(hex);
  if (!bytes || bytes->size() < transport::kMinSecretBytes ||
      bytes->size() > transport::kMaxSecretBytes) {
    // The value itself is a secret: it is not repeated in the message.
    throw Error(ErrorCode::kInvalidArgument, -1,
                std::string(kJobSecretVariable) + " must be " +
                    std::to_string(2 * transport::kMinSecretBytes) + ".." +
                    std::to_string(2 * transport::kMaxSecretBytes) + " hex digits, got " +
                    std::to_string(hex.size()) + " characters");
  }
  return *bytes;
}

std::vector<std::uint8_t> agree_job_secret(Store& store, const std::string& key, int rank,
                                           const char* variable_value) {
  if (variable_value != nullptr && *variable_value != '\0') return parse_job_secret(variable_value);
  if (rank == 0) store.set(key, transport::to_hex(transport::random_secret()));
  const std::string stored = store.get(key);
  const auto bytes = transport::parse_hex(stored);
  if (!bytes || bytes->size() < transport::kMinSecretBytes ||
      bytes->size() > transport::kMaxSecretBytes) {
    throw Error(ErrorCode::kProtocol, -1, "the store holds a malformed job secret under " + key);
  }
  return *bytes;
}

}  // namespace dlcp::api
