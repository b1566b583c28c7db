#include "transport/control_channel.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/net.hpp"

namespace dlcp::transport {
namespace {
constexpr std::size_t kReadSlack = 1u << 20;
}  // namespace

ControlChannel::ControlChannel(Fd fd, std::size_t max_queued_bytes)
    : fd_(std::move(fd)), read_buffer_(64 * 1024), max_queued_bytes_(max_queued_bytes) {}

void ControlChannel::send(const wire::ControlMessage& message) {
  if (failed_) return;
  if (write_offset_ == write_buffer_.size()) {
    write_buffer_.clear();
    write_offset_ = 0;
  } else if (write_offset_ >= max_queued_bytes_) {
    // Reclaim what was already written before the queue grows further.
    write_buffer_.erase(write_buffer_.begin(),
                        write_buffer_.begin() + static_cast<std::ptrdiff_t>(write_offset_));
    write_offset_ = 0;
  }
  wire::encode_control(message, write_buffer_);
  if (!flush()) return;
  if (queued_bytes() > max_queued_bytes_) {
    failed_ = true;
    error_ = "stopped reading its control connection (" + std::to_string(queued_bytes() >> 20) +
             " MiB of control messages queued)";
  }
}

bool ControlChannel::flush() {
  if (failed_) return false;
  while (fd_.valid() && write_offset_ < write_buffer_.size()) {
    const ssize_t n = ::send(fd_.get(), write_buffer_.data() + write_offset_,
                             write_buffer_.size() - write_offset_, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      write_offset_ += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    if (n < 0 && errno == EINTR) continue;
    error_ = net::errno_message("control send failed", errno);
    failed_ = true;
    return false;
  }
  if (write_offset_ == write_buffer_.size()) {
    write_buffer_.clear();
    write_offset_ = 0;
  }
  return fd_.valid();
}

ControlTcpStats ControlChannel::tcp_stats() const {
  tcp_info info{};
  socklen_t length = sizeof info;
  if (!fd_.valid() || ::getsockopt(fd_.get(), IPPROTO_TCP, TCP_INFO, &info, &length) != 0) {
    return {};
  }
  return {info.tcpi_total_retrans, info.tcpi_rto};
}

void ControlChannel::finish() {
  if (!fd_.valid() || wants_write()) return;
  ::shutdown(fd_.get(), SHUT_WR);
  finished_ = true;
  peer_finished();  // discards what the peer sent meanwhile
}

bool ControlChannel::peer_finished() {
  if (!fd_.valid() || !finished_) return true;
  std::byte sink[4096];
  for (;;) {
    const ssize_t n = ::recv(fd_.get(), sink, sizeof(sink), MSG_DONTWAIT);
    if (n > 0) continue;
    if (n < 0 && errno == EINTR) continue;
    return n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
  }
}

ControlChannel::ReadStatus ControlChannel::read(std::vector<wire::ControlMessage>& out) {
  // A peer's last frames (its final Stop, its Abort, its Goodbye) often arrive together with the
  // end of the stream, or just before a reset (a peer that exits with unread data resets the
  // connection): they are parsed before the close or the failure is reported.
  bool closed = false;
  bool failed = false;
  for (;;) {
    if (read_length_ == read_buffer_.size()) {
      // Parse what we have before buffering more, so a flood of frames cannot grow the buffer
      // beyond one maximal frame plus this slack.
      if (read_length_ >= kReadSlack && read_length_ >= needed_) break;
      read_buffer_.resize(std::max(read_buffer_.size() * 2, needed_));
    }
    const ssize_t n = ::recv(fd_.get(), read_buffer_.data() + read_length_,
                             read_buffer_.size() - read_length_, MSG_DONTWAIT);
    if (n == 0) {
      error_ = "connection closed by peer";
      closed = true;
      break;
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      error_ = net::errno_message("control receive failed", errno);
      failed = true;
      break;
    }
    read_length_ += static_cast<std::size_t>(n);
  }
  // Parse every complete frame.
  std::size_t offset = 0;
  while (read_length_ - offset >= wire::kControlLengthPrefixBytes) {
    std::span<const std::byte> available(read_buffer_.data() + offset, read_length_ - offset);
    const auto length = wire::decode_control_length(available);
    if (!length) {
      error_ =
          std::string("invalid control frame: ") + std::string(wire::to_string(length.error()));
      return ReadStatus::kFailed;
    }
    if (*length > max_frame_bytes_) {
      error_ = "control frame of " + std::to_string(*length) + " bytes exceeds the limit of " +
               std::to_string(max_frame_bytes_);
      return ReadStatus::kFailed;
    }
    const std::size_t frame = wire::kControlLengthPrefixBytes + *length;
    if (available.size() < frame) {
      needed_ = frame;
      break;
    }
    auto message =
        wire::decode_control_body(available.subspan(wire::kControlLengthPrefixBytes, *length));
    if (!message) {
      error_ =
          std::string("invalid control message: ") + std::string(wire::to_string(message.error()));
      return ReadStatus::kFailed;
    }
    out.push_back(std::move(*message));
    offset += frame;
  }
  if (offset > 0) {
    std::memmove(read_buffer_.data(), read_buffer_.data() + offset, read_length_ - offset);
    read_length_ -= offset;
  }
  if (failed) return ReadStatus::kFailed;
  return closed ? ReadStatus::kClosed : ReadStatus::kOk;
}

}  // namespace dlcp::transport
