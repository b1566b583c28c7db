// from_environment: DLCP_* variables first, torchrun's RANK/WORLD_SIZE/MASTER_* as a fallback.
#include <charconv>
#include <cstdlib>
#include <optional>
#include <utility>

#include "dlcp/error.hpp"
#include "dlcp/rendezvous.hpp"

namespace dlcp {

namespace {

constexpr const char* kVariables[] = {
    "DLCP_RANK",
    "DLCP_WORLD_SIZE",
    "DLCP_STORE",
    "DLCP_STORE_SERVER",
    "DLCP_STORE_BIND_HOST",
    "DLCP_STORE_PORT_OFFSET",
    "DLCP_STORE_TIMEOUT_MS",
    "RANK",
    "WORLD_SIZE",
    "MASTER_ADDR",
    "MASTER_PORT",
};
constexpr std::int64_t kDefaultPortOffset = 1;
constexpr std::int64_t kDefaultTimeoutMs = 300000;
constexpr std::int64_t kMaxTimeoutMs = 0xFFFFFFFF;  // the store protocol's u32 milliseconds
constexpr std::int64_t kMaxWorldSize = 1 << 20;
constexpr std::string_view kTcpScheme = "tcp://";
constexpr std::string_view kFileScheme = "file://";

[[noreturn]] void invalid(const std::string& variable, const std::string& value,
                          const std::string& why) {
  throw Error(ErrorCode::kInvalidArgument, -1,
              "rendezvous: " + variable + "='" + value + "' " + why);
}

// The value of a variable set to something other than the empty string.
std::optional<std::string> lookup(const EnvironmentVariables& environment,
                                  const std::string& name) {
  const auto found = environment.find(name);
  if (found == environment.end() || found->second.empty()) return std::nullopt;
  return found->second;
}

// A decimal integer and nothing else (no spaces, no '+').
std::optional<std::int64_t> to_integer(const std::string& text) {
  std::int64_t result = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, result);
  if (ec != std::errc{} || ptr != end) return std::nullopt;
  return result;
}

std::int64_t parse_integer(const std::string& variable, const std::string& value, std::int64_t low,
                           std::int64_t high) {
  const auto result = to_integer(value);
  if (!result) invalid(variable, value, "is not a decimal integer");
  if (*result < low || *result > high) {
    invalid(variable, value,
            "is out of range (" + std::to_string(low) + " to " + std::to_string(high) + ")");
  }
  return *result;
}

// A setting named first by dlcp, then by torchrun: the value and the name it came from.
std::pair<std::string, std::string> required(const EnvironmentVariables& environment,
                                             const std::string& dlcp_name,
                                             const std::string& torchrun_name) {
  if (auto value = lookup(environment, dlcp_name)) return {*value, dlcp_name};
  if (auto value = lookup(environment, torchrun_name)) return {*value, torchrun_name};
  throw Error(ErrorCode::kInvalidArgument, -1,
              "rendezvous: neither " + dlcp_name + " nor torchrun's " + torchrun_name + " is set");
}

bool parse_switch(const std::string& variable, const std::string& value) {
  if (value == "1" || value == "true") return true;
  if (value == "0" || value == "false") return false;
  invalid(variable, value, "must be 0, 1, true or false");
}

void check_host(const std::string& variable, const std::string& value, const std::string& host) {
  if (host.empty() || host.find_first_of(":/[] ") != std::string::npos) {
    invalid(variable, value, "does not name an IPv4 address or host name");
  }
}

// tcp://host:port
void parse_tcp_url(const std::string& value, RendezvousSpec& spec) {
  const std::string rest = value.substr(kTcpScheme.size());
  const auto colon = rest.rfind(':');
  if (colon == std::string::npos) invalid("DLCP_STORE", value, "must look like tcp://host:port");
  spec.host = rest.substr(0, colon);
  check_host("DLCP_STORE", value, spec.host);
  const auto port = to_integer(rest.substr(colon + 1));
  if (!port || *port < 1 || *port > 65535) {
    invalid("DLCP_STORE", value, "has a port that is not a number from 1 to 65535");
  }
  spec.port = static_cast<std::uint16_t>(*port);
}

// file:///absolute/directory
void parse_file_url(const std::string& value, RendezvousSpec& spec) {
  spec.directory = value.substr(kFileScheme.size());
  if (spec.directory.empty() || spec.directory.front() != '/') {
    invalid("DLCP_STORE", value, "must look like file:///absolute/directory");
  }
}

std::string describe(const RendezvousSpec& spec, const std::string& rank_source,
                     const std::string& store_source) {
  std::string text = "rank " + std::to_string(spec.rank) + " of " +
                     std::to_string(spec.world_size) + " (" + rank_source + "), store ";
  if (spec.kind == RendezvousSpec::Kind::kFile) {
    text += "file://" + spec.directory;
  } else {
    text += "tcp://" + spec.host + ":" + std::to_string(spec.port);
    text += spec.serve ? " served by this rank on " + spec.bind_host : " served elsewhere";
  }
  return text + " (" + store_source + "), timeout " + std::to_string(spec.timeout.count()) + " ms";
}

}  // namespace

RendezvousSpec parse_rendezvous_environment(const EnvironmentVariables& environment) {
  RendezvousSpec spec;
  const auto [world_text, world_variable] = required(environment, "DLCP_WORLD_SIZE", "WORLD_SIZE");
  spec.world_size = static_cast<int>(parse_integer(world_variable, world_text, 1, kMaxWorldSize));
  const auto [rank_text, rank_variable] = required(environment, "DLCP_RANK", "RANK");
  spec.rank = static_cast<int>(parse_integer(rank_variable, rank_text, 0, kMaxWorldSize));
  if (spec.rank >= spec.world_size) {
    invalid(rank_variable, rank_text,
            "is not below the world size " + world_variable + "=" + world_text);
  }

  spec.timeout = std::chrono::milliseconds(kDefaultTimeoutMs);
  if (auto text = lookup(environment, "DLCP_STORE_TIMEOUT_MS")) {
    spec.timeout =
        std::chrono::milliseconds(parse_integer("DLCP_STORE_TIMEOUT_MS", *text, 1, kMaxTimeoutMs));
  }

  std::string store_source;
  if (auto store = lookup(environment, "DLCP_STORE")) {
    store_source = "DLCP_STORE";
    if (store->starts_with(kTcpScheme)) {
      spec.kind = RendezvousSpec::Kind::kTcp;
      parse_tcp_url(*store, spec);
    } else if (store->starts_with(kFileScheme)) {
      spec.kind = RendezvousSpec::Kind::kFile;
      parse_file_url(*store, spec);
    } else {
      invalid("DLCP_STORE", *store,
              "has an unknown scheme (expected tcp://host:port or file:///directory)");
    }
  } else {
    const auto address = lookup(environment, "MASTER_ADDR");
    const auto port_text = lookup(environment, "MASTER_PORT");
    if (!address || !port_text) {
      throw Error(ErrorCode::kInvalidArgument, -1,
                  std::string("rendezvous: DLCP_STORE is not set, and neither are torchrun's ") +
                      (address     ? "MASTER_PORT"
                       : port_text ? "MASTER_ADDR"
                                   : "MASTER_ADDR and MASTER_PORT"));
    }
    check_host("MASTER_ADDR", *address, *address);
    const std::int64_t master_port = parse_integer("MASTER_PORT", *port_text, 1, 65535);
    std::int64_t offset = kDefaultPortOffset;
    if (auto text = lookup(environment, "DLCP_STORE_PORT_OFFSET")) {
      offset = parse_integer("DLCP_STORE_PORT_OFFSET", *text, 0, 65534);
    }
    if (master_port + offset > 65535) {
      invalid("DLCP_STORE_PORT_OFFSET", std::to_string(offset),
              "plus MASTER_PORT=" + *port_text + " is above 65535");
    }
    spec.kind = RendezvousSpec::Kind::kTcp;
    spec.host = *address;
    spec.port = static_cast<std::uint16_t>(master_port + offset);
    store_source = "MASTER_ADDR, MASTER_PORT + " + std::to_string(offset);
  }

  if (spec.kind == RendezvousSpec::Kind::kTcp) {
    bool rank_zero_serves = true;
    if (auto text = lookup(environment, "DLCP_STORE_SERVER")) {
      rank_zero_serves = parse_switch("DLCP_STORE_SERVER", *text);
    }
    spec.serve = rank_zero_serves && spec.rank == 0;
    spec.bind_host = spec.host;
    if (auto bind_host = lookup(environment, "DLCP_STORE_BIND_HOST")) {
      check_host("DLCP_STORE_BIND_HOST", *bind_host, *bind_host);
      spec.bind_host = *bind_host;
    }
  }
  spec.describe = describe(spec, rank_variable + ", " + world_variable, store_source);
  return spec;
}

RendezvousConfig connect_rendezvous(const RendezvousSpec& spec) {
  RendezvousConfig config;
  config.rank = spec.rank;
  config.world_size = spec.world_size;
  config.describe = spec.describe;
  try {
    if (spec.kind == RendezvousSpec::Kind::kFile) {
      config.store = std::make_unique<FileStore>(spec.directory);
      config.store->set_timeout(spec.timeout);
    } else {
      config.store = TcpStore::serve_or_connect(spec.host, spec.port, spec.serve, spec.timeout,
                                                spec.bind_host);
    }
  } catch (const Error& e) {
    throw Error(e.code(), e.peer(), std::string(e.what()) + " [rendezvous: " + spec.describe + "]");
  }
  return config;
}

RendezvousConfig from_environment(const EnvironmentVariables& environment) {
  return connect_rendezvous(parse_rendezvous_environment(environment));
}

RendezvousConfig from_environment() {
  EnvironmentVariables environment;
  for (const char* name : kVariables) {
    if (const char* value = std::getenv(name)) environment[name] = value;
  }
  return from_environment(environment);
}

}  // namespace dlcp
