// Errors raised by dlcp. Every error names what failed and, where there is one, the peer.
#pragma once

#include <stdexcept>
#include <string>

namespace dlcp {

enum class ErrorCode {
  kInvalidArgument,  // impossible options or arguments
  kSystem,           // a system call failed (bind, socket, ...)
  kConnect,          // could not reach a peer or complete the handshake in time
  kPeerLost,         // the control connection to a peer closed or failed
  kDeadline,         // a message did not settle before its deadline
  kAborted,          // the peer aborted the message, or the transport shut down
  kProtocol,         // the peer broke the protocol (wrong job, inconsistent message)
};

const char* to_string(ErrorCode code);

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, int peer, const std::string& what)
      : std::runtime_error(what), code_(code), peer_(peer) {}
  ErrorCode code() const { return code_; }
  // Rank of the peer involved, or -1.
  int peer() const { return peer_; }

 private:
  ErrorCode code_;
  int peer_;
};

}  // namespace dlcp
