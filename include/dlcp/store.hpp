// Rendezvous: a small key-value store through which ranks find each other.
//
//   auto store = dlcp::TcpStore::serve_or_connect("10.0.0.1", 29500, rank == 0);
//   store->set("hello", "world");
//   std::string v = store->get("hello");     // blocks until set, or throws kDeadline
//
// Implementations: TcpStore (one rank, or a separate process, serves it), FileStore (a shared
// file), PrefixStore (a namespace inside another store). from_environment() builds the right one
// from DLCP_* variables or from torchrun's MASTER_ADDR/MASTER_PORT/RANK/WORLD_SIZE.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace dlcp {

class Store {
 public:
  virtual ~Store() = default;

  // Values are arbitrary bytes. set overwrites.
  virtual void set(const std::string& key, const std::string& value) = 0;
  // Blocks until the key exists (or throws dlcp::Error kDeadline after timeout()).
  virtual std::string get(const std::string& key) = 0;
  // Atomically adds delta to the integer stored at key (absent = 0) and returns the new value.
  virtual std::int64_t add(const std::string& key, std::int64_t delta) = 0;
  // True when every key exists; never blocks.
  virtual bool check(const std::vector<std::string>& keys) = 0;
  // Blocks until every key exists (or throws kDeadline after `timeout`).
  virtual void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) = 0;
  void wait(const std::vector<std::string>& keys) { wait(keys, timeout()); }

  std::chrono::milliseconds timeout() const { return timeout_; }
  void set_timeout(std::chrono::milliseconds timeout) { timeout_ = timeout; }

 private:
  std::chrono::milliseconds timeout_{30000};
};

// In-process store for ranks that run as threads of one process (tests, single-host tools).
class HashStore final : public Store {
 public:
  HashStore();
  ~HashStore() override;
  void set(const std::string& key, const std::string& value) override;
  std::string get(const std::string& key) override;
  std::int64_t add(const std::string& key, std::int64_t delta) override;
  bool check(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override;
  using Store::wait;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Serves the TcpStore protocol on host:port from a background thread (one poll loop for every
// client; blocking GET/WAIT requests are parked, never block the loop). Usually owned by a
// TcpStore via serve_or_connect; constructed directly for a standalone server.
class TcpStoreServer {
 public:
  // Binds host:port (port 0 = ephemeral) and starts serving. Throws dlcp::Error(kSystem)
  // naming host:port when it cannot bind, kInvalidArgument when host does not resolve.
  TcpStoreServer(const std::string& host, std::uint16_t port);
  // Stops serving and closes every client connection (their pending calls fail with kPeerLost).
  ~TcpStoreServer();
  TcpStoreServer(const TcpStoreServer&) = delete;
  TcpStoreServer& operator=(const TcpStoreServer&) = delete;

  // The bound port (the ephemeral one when constructed with port 0).
  std::uint16_t port() const;
  // "host:port" as bound.
  std::string address() const;
  // Stops serving now; idempotent.
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Client of a TcpStoreServer. Thread-safe: concurrent calls use separate connections, so a
// blocking get() in one thread never holds up a set() in another.
class TcpStore final : public Store {
 public:
  // Connects to host:port, retrying until `timeout` (the server may start later); throws
  // dlcp::Error(kConnect) naming host:port when it is not reachable in time. `timeout` also
  // becomes the store's timeout() for get/wait.
  TcpStore(const std::string& host, std::uint16_t port,
           std::chrono::milliseconds timeout = std::chrono::seconds(30));
  // When is_server, first starts a TcpStoreServer on bind_host:port (bind_host empty = host;
  // port 0 = ephemeral) that lives as long as the returned store, then connects to it like
  // every other rank.
  static std::unique_ptr<TcpStore> serve_or_connect(
      const std::string& host, std::uint16_t port, bool is_server,
      std::chrono::milliseconds timeout = std::chrono::seconds(30),
      const std::string& bind_host = {});
  ~TcpStore() override;

  void set(const std::string& key, const std::string& value) override;
  std::string get(const std::string& key) override;
  std::int64_t add(const std::string& key, std::int64_t delta) override;
  bool check(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override;
  using Store::wait;

  // The server's port (the bound one when this store serves on an ephemeral port).
  std::uint16_t port() const;
  // "host:port" of the server.
  std::string address() const;
  // True when this instance owns the server.
  bool is_server() const;

 private:
  struct Impl;
  TcpStore(std::unique_ptr<TcpStoreServer> server, const std::string& host, std::uint16_t port,
           std::chrono::milliseconds timeout);
  std::unique_ptr<Impl> impl_;
};

// A store in a directory on a (shared) filesystem: one file per key, written to a temporary
// file and renamed into place, so readers see a whole value or none; set and add also take an
// flock on <dir>/.lock so that concurrent adds from many processes are atomic. Blocking calls
// poll with a short sleep. Use a fresh directory per job: keys from an earlier run persist.
class FileStore final : public Store {
 public:
  // Creates the directory when missing; throws dlcp::Error(kSystem) naming it on failure.
  explicit FileStore(const std::string& directory);
  ~FileStore() override;

  void set(const std::string& key, const std::string& value) override;
  std::string get(const std::string& key) override;
  std::int64_t add(const std::string& key, std::int64_t delta) override;
  bool check(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override;
  using Store::wait;

  const std::string& directory() const { return directory_; }

 private:
  std::string directory_;
};

// Keys of `base` under "<prefix>/": independent namespaces (one per job step, per group...) in
// one store. `base` must outlive the PrefixStore; the timeout starts as base's.
class PrefixStore final : public Store {
 public:
  PrefixStore(std::string prefix, Store& base);

  void set(const std::string& key, const std::string& value) override;
  std::string get(const std::string& key) override;
  std::int64_t add(const std::string& key, std::int64_t delta) override;
  bool check(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override;
  using Store::wait;

  const std::string& prefix() const { return prefix_; }

 private:
  std::string qualified(const std::string& key) const { return prefix_ + "/" + key; }
  std::vector<std::string> qualified(const std::vector<std::string>& keys) const;

  std::string prefix_;
  Store& base_;
};

// A standalone store server (`dlcp store-server`): serves host:port, prints
// "dlcp store server listening on <host:port>" to stdout, and returns 0 after SIGINT or SIGTERM.
// Blocks SIGINT/SIGTERM in the calling thread to wait for them. Throws dlcp::Error like
// TcpStoreServer when it cannot bind.
int run_store_server(const std::string& host, std::uint16_t port);

}  // namespace dlcp
