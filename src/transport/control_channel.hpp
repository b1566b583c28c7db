// The reliable control channel to one peer: a non-blocking TCP connection carrying framed
// control messages (wire/control.hpp) at the control DSCP. Reads are parsed incrementally; writes
// are queued and flushed as the socket allows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/fd.hpp"
#include "wire/control.hpp"

namespace dlcp::transport {

class ControlChannel {
 public:
  ControlChannel() = default;
  explicit ControlChannel(Fd fd);

  int fd() const { return fd_.get(); }
  bool open() const { return fd_.valid(); }

  // Queues one message and tries to write it now.
  void send(const wire::ControlMessage& message);
  // Writes as much of the queue as the socket takes. Returns false when the connection failed
  // (the reason is in error()).
  bool flush();
  bool wants_write() const { return write_offset_ < write_buffer_.size(); }

  enum class ReadStatus { kOk, kClosed, kFailed };
  // Reads what is available and appends each complete, valid message to `out`. An invalid frame
  // fails the channel (kFailed, error() says why): a peer that breaks framing cannot be trusted
  // with the rest of the stream.
  ReadStatus read(std::vector<wire::ControlMessage>& out);

  const std::string& error() const { return error_; }
  void close() { fd_.reset(); }

 private:
  Fd fd_;
  std::vector<std::byte> read_buffer_;
  std::size_t read_length_ = 0;
  std::size_t needed_ = 0;  // bytes of the incomplete frame at the buffer start
  std::vector<std::byte> write_buffer_;
  std::size_t write_offset_ = 0;
  std::string error_;
};

}  // namespace dlcp::transport
