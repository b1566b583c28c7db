// FileStore: one file per key in a shared directory.
//
// Names: "k_<escaped key>" while that stays short, else "h_<128-bit hash>"; every file starts
// with the key it holds (u32 big-endian length, key bytes), then the value, so a hash collision
// is detected instead of returning another key's value. Writes go to a temporary file that is
// renamed into place (readers never see half a value); set and add hold an flock on <dir>/.lock
// so that read-modify-write adds from many processes are atomic.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <filesystem>
#include <optional>
#include <thread>

#include "common/fd.hpp"
#include "common/net.hpp"
#include "dlcp/error.hpp"
#include "dlcp/store.hpp"
#include "rendezvous/store_value.hpp"

namespace dlcp {

namespace {

using Clock = std::chrono::steady_clock;
using rendezvous::describe_keys;
using rendezvous::quote_key;

constexpr std::size_t kMaxEscapedNameBytes = 200;  // file names are limited to 255 bytes
constexpr std::size_t kKeyLengthBytes = 4;
constexpr auto kFirstPollDelay = std::chrono::milliseconds(1);
constexpr auto kMaxPollDelay = std::chrono::milliseconds(20);

std::uint64_t mix64(std::uint64_t x) {  // splitmix64's finaliser
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

std::uint64_t fnv1a(const std::string& bytes, std::uint64_t basis) {
  std::uint64_t h = basis;
  for (const char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001B3ull;
  }
  return mix64(h);
}

std::string file_name(const std::string& key) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string name = "k_";
  for (const char c : key) {
    const auto byte = static_cast<unsigned char>(c);
    if ((byte >= 'a' && byte <= 'z') || (byte >= 'A' && byte <= 'Z') ||
        (byte >= '0' && byte <= '9') || byte == '-' || byte == '_' || byte == '.') {
      name += c;
    } else {
      name += '%';
      name += kHex[byte >> 4];
      name += kHex[byte & 0xF];
    }
    if (name.size() > kMaxEscapedNameBytes) break;
  }
  if (name.size() <= kMaxEscapedNameBytes) return name;
  name = "h_";
  for (const std::uint64_t part :
       {fnv1a(key, 0xCBF29CE484222325ull), fnv1a(key, 0x84222325CBF29CE4ull)}) {
    for (int shift = 60; shift >= 0; shift -= 4) name += kHex[(part >> shift) & 0xF];
  }
  return name;
}

Error system_error(const std::string& what, int error) {
  return Error(ErrorCode::kSystem, -1, net::errno_message(what, error));
}

// The value stored for key under `path`, or nothing when the file does not exist.
std::optional<std::string> read_value(const std::string& path, const std::string& key) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    if (errno == ENOENT) return std::nullopt;
    throw system_error("file store: cannot open " + path + " for key " + quote_key(key), errno);
  }
  std::string contents;
  char buffer[64 * 1024];
  while (true) {
    const ssize_t n = ::read(fd.get(), buffer, sizeof(buffer));
    if (n > 0) {
      contents.append(buffer, static_cast<std::size_t>(n));
    } else if (n == 0) {
      break;
    } else if (errno != EINTR) {
      throw system_error("file store: cannot read " + path + " for key " + quote_key(key), errno);
    }
  }
  std::size_t key_length = 0;
  if (contents.size() >= kKeyLengthBytes) {
    for (std::size_t i = 0; i < kKeyLengthBytes; ++i) {
      key_length = (key_length << 8) | static_cast<unsigned char>(contents[i]);
    }
  }
  if (contents.size() < kKeyLengthBytes || contents.size() - kKeyLengthBytes < key_length ||
      contents.compare(kKeyLengthBytes, key_length, key) != 0) {
    throw Error(ErrorCode::kProtocol, -1,
                "file store: " + path + " does not hold key " + quote_key(key) +
                    " (a corrupt file, or another key with the same hash)");
  }
  return contents.substr(kKeyLengthBytes + key_length);
}

// Writes key and value to a temporary file next to `path` and renames it over `path`.
void write_value(const std::string& directory, const std::string& path, const std::string& key,
                 const std::string& value) {
  static std::atomic<std::uint64_t> counter{0};
  const std::string temporary = directory + "/.tmp." + std::to_string(::getpid()) + "." +
                                std::to_string(counter.fetch_add(1));
  Fd fd(::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (!fd.valid()) {
    throw system_error("file store: cannot create " + temporary + " for key " + quote_key(key),
                       errno);
  }
  std::string contents(kKeyLengthBytes, '\0');
  for (std::size_t i = 0; i < kKeyLengthBytes; ++i) {
    contents[i] = static_cast<char>((key.size() >> (8 * (kKeyLengthBytes - 1 - i))) & 0xFF);
  }
  contents += key;
  contents += value;
  for (std::size_t written = 0; written < contents.size();) {
    const ssize_t n = ::write(fd.get(), contents.data() + written, contents.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int error = n < 0 ? errno : EIO;
      ::unlink(temporary.c_str());
      throw system_error("file store: cannot write " + temporary + " for key " + quote_key(key),
                         error);
    }
    written += static_cast<std::size_t>(n);
  }
  fd.reset();
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    const int error = errno;
    ::unlink(temporary.c_str());
    throw system_error("file store: cannot rename " + temporary + " to " + path, error);
  }
}

// Holds an exclusive flock on <directory>/.lock (per open file, so threads exclude each other
// too).
class DirectoryLock {
 public:
  explicit DirectoryLock(const std::string& directory) {
    const std::string path = directory + "/.lock";
    fd_ = Fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
    if (!fd_.valid()) throw system_error("file store: cannot open lock file " + path, errno);
    while (::flock(fd_.get(), LOCK_EX) != 0) {
      if (errno != EINTR) throw system_error("file store: cannot lock " + path, errno);
    }
  }
  // Closing the descriptor releases the lock.

 private:
  Fd fd_;
};

}  // namespace

FileStore::FileStore(const std::string& directory) : directory_(directory) {
  std::error_code error;
  std::filesystem::create_directories(directory_, error);
  if (error || !std::filesystem::is_directory(directory_, error)) {
    throw Error(ErrorCode::kSystem, -1,
                "file store: cannot create directory " + directory_ + ": " +
                    (error ? error.message() : "exists and is not a directory"));
  }
}

FileStore::~FileStore() = default;

void FileStore::set(const std::string& key, const std::string& value) {
  DirectoryLock lock(directory_);
  write_value(directory_, directory_ + "/" + file_name(key), key, value);
}

std::string FileStore::get(const std::string& key) {
  wait({key}, timeout());
  const std::string path = directory_ + "/" + file_name(key);
  auto value = read_value(path, key);
  if (!value) {  // keys are never deleted, unless someone clears the directory under us
    throw Error(
        ErrorCode::kSystem, -1,
        "file store: " + path + " for key " + quote_key(key) + " vanished after it appeared");
  }
  return std::move(*value);
}

std::int64_t FileStore::add(const std::string& key, std::int64_t delta) {
  const std::string path = directory_ + "/" + file_name(key);
  DirectoryLock lock(directory_);
  std::string value = read_value(path, key).value_or(std::string());
  const std::int64_t sum = rendezvous::add_to_counter(key, value, delta);
  write_value(directory_, path, key, value);
  return sum;
}

bool FileStore::check(const std::vector<std::string>& keys) {
  for (const auto& key : keys) {
    const std::string path = directory_ + "/" + file_name(key);
    struct stat info {};
    if (::stat(path.c_str(), &info) == 0) continue;
    if (errno == ENOENT) return false;
    throw system_error("file store: cannot stat " + path + " for key " + quote_key(key), errno);
  }
  return true;
}

void FileStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  const auto start = Clock::now();
  auto delay = kFirstPollDelay;
  while (!check(keys)) {
    const auto waited = Clock::now() - start;
    if (waited >= timeout) {
      throw Error(ErrorCode::kDeadline, -1,
                  "store: timed out after " + std::to_string(timeout.count()) +
                      " ms waiting for key(s) " + describe_keys(keys) + " in file store " +
                      directory_);
    }
    std::this_thread::sleep_for(std::min<Clock::duration>(delay, timeout - waited));
    delay = std::min(delay * 2, kMaxPollDelay);
  }
}

}  // namespace dlcp
