"""Exceptions raised by dlcp. Every C++ ``dlcp::Error`` arrives as one of these classes.

Each also derives from the closest built-in exception, so ``except ValueError`` or
``except TimeoutError`` in existing training code keeps working.
"""


class DlcpError(RuntimeError):
    """Base class. ``peer`` is the rank involved, or -1; ``code`` names the kind of failure."""

    code = "error"

    def __init__(self, message, peer=-1):
        super().__init__(message)
        self.peer = peer


class InvalidArgumentError(DlcpError, ValueError):
    """Impossible options or arguments; the message names the option."""

    code = "invalid argument"


class SystemCallError(DlcpError, OSError):
    """A system call (bind, socket, ...) failed."""

    code = "system"


class ConnectError(DlcpError, ConnectionError):
    """A peer could not be reached, or the handshake did not finish in time."""

    code = "connect"


class PeerLostError(DlcpError, ConnectionError):
    """The connection to a peer closed or failed."""

    code = "peer lost"


class DeadlineError(DlcpError, TimeoutError):
    """A transfer (or a store lookup) did not settle before its deadline."""

    code = "deadline"


class AbortedError(DlcpError):
    """A peer aborted the collective, or the communicator shut down."""

    code = "aborted"


class ProtocolError(DlcpError):
    """A peer broke the protocol (another job, inconsistent collectives)."""

    code = "protocol"


# Indexed by the C++ dlcp::ErrorCode value (include/dlcp/error.hpp).
BY_CODE = (
    InvalidArgumentError,
    SystemCallError,
    ConnectError,
    PeerLostError,
    DeadlineError,
    AbortedError,
    ProtocolError,
)
