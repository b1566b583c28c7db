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

// The kernel's view of a control connection (TCP_INFO).
struct ControlTcpStats {
  std::uint64_t retransmits = 0;  // segments resent over the connection's life
  std::uint64_t rto_us = 0;       // its retransmission timeout now: what one lost frame costs
};

class ControlChannel {
 public:
  // Bytes a peer may leave unread in our send queue before the channel fails: far more than the
  // control traffic of any healthy peer (one maximal frame plus slack), so only a peer that
  // stopped reading reaches it.
  static constexpr std::size_t kDefaultMaxQueuedBytes = 64u << 20;

  ControlChannel() = default;
  explicit ControlChannel(Fd fd, std::size_t max_queued_bytes = kDefaultMaxQueuedBytes);

  int fd() const { return fd_.get(); }
  bool open() const { return fd_.valid(); }

  // Queues one message and tries to write it now. A queue beyond max_queued_bytes fails the
  // channel (healthy() turns false, error() says why).
  void send(const wire::ControlMessage& message);
  // Writes as much of the queue as the socket takes. Returns false when the connection failed
  // (the reason is in error()).
  bool flush();
  bool wants_write() const { return write_offset_ < write_buffer_.size(); }
  bool healthy() const { return !failed_; }
  std::size_t queued_bytes() const { return write_buffer_.size() - write_offset_; }

  // Frames longer than this fail the channel before they are buffered (a handshake needs far
  // less than a running connection). Default: wire::kMaxControlFrameBytes.
  void set_max_frame_bytes(std::size_t bytes) { max_frame_bytes_ = bytes; }

  enum class ReadStatus { kOk, kClosed, kFailed };
  // Reads what is available and appends each complete, valid message to `out`. An invalid frame
  // fails the channel (kFailed, error() says why): a peer that breaks framing cannot be trusted
  // with the rest of the stream.
  ReadStatus read(std::vector<wire::ControlMessage>& out);

  const std::string& error() const { return error_; }
  // Zeros for a closed channel or a socket that is not TCP.
  ControlTcpStats tcp_stats() const;
  void close() { fd_.reset(); }
  // The end of an orderly exit, once the queue is flushed: sends FIN after the last frame and
  // discards what the peer sent meanwhile, so that closing does not reset the connection (a
  // reset can make the peer lose those last frames, e.g. an Abort naming the cause).
  void finish();
  // After finish(): whether the peer has closed its side (end of stream, or the connection is
  // gone), discarding what it still sent. Closing before that, with its data unread, would reset
  // the connection, and a reset discards what the peer has not yet received of ours: on a long
  // lossy path possibly the Goodbye, so that the peer counts an orderly exit as a failure.
  // True at once when this side did not finish (its queue was not flushed) or is closed.
  bool peer_finished();

 private:
  Fd fd_;
  bool finished_ = false;  // finish() sent our end of the stream
  std::vector<std::byte> read_buffer_;
  std::size_t read_length_ = 0;
  std::size_t needed_ = 0;  // bytes of the incomplete frame at the buffer start
  std::vector<std::byte> write_buffer_;
  std::size_t write_offset_ = 0;
  std::size_t max_queued_bytes_ = kDefaultMaxQueuedBytes;
  std::size_t max_frame_bytes_ = wire::kMaxControlFrameBytes;
  bool failed_ = false;
  std::string error_;
};

}  // namespace dlcp::transport
