#include "api/host_grouping.hpp"

#include <unistd.h>

#include <array>
#include <vector>

#include "transport/host_identity.hpp"

namespace dlcp::api {

std::string detected_host_id() {
  if (const auto identity = transport::read_host_identity()) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string text;
    for (const std::uint8_t byte : *identity) {
      text += kHex[byte >> 4];
      text += kHex[byte & 0xF];
    }
    return text;
  }
  std::array<char, 256> name{};
  if (::gethostname(name.data(), name.size() - 1) == 0) return std::string("host:") + name.data();
  return "unknown-host";
}

collectives::HostLayout learn_host_layout(Store& store, const std::string& prefix, int rank,
                                          int workers, const std::string& host_id) {
  store.set(prefix + std::to_string(rank), host_id.empty() ? detected_host_id() : host_id);
  std::vector<std::string> ids;
  ids.reserve(static_cast<std::size_t>(workers));
  for (int worker = 0; worker < workers; ++worker) {
    ids.push_back(store.get(prefix + std::to_string(worker)));
  }
  return collectives::HostLayout(ids);
}

}  // namespace dlcp::api
