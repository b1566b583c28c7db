"""dlcp: gradient communication for data-parallel training on lossy, congested Ethernet.

``dlcp.Communicator`` runs collectives over float32 buffers; ``dlcp.torch`` adds the ``dlcp``
torch.distributed backend and a DDP communication hook (docs/pytorch.md).
"""

from . import errors
from ._version import __version__
from ._core import (
    Aggregation,
    Algorithm,
    CallbackStore,
    CollectiveOptions,
    CollectiveResult,
    CommunicatorOptions,
    FileStore,
    HashStore,
    PrefixStore,
    ReduceOp,
    Store,
    TcpStore,
    TransportOptions,
    Work,
    from_environment,
)
from .communicator import Communicator
from .errors import (
    AbortedError,
    ConnectError,
    DeadlineError,
    DlcpError,
    InvalidArgumentError,
    PeerLostError,
    ProtocolError,
    SystemCallError,
)
from .options import collective_options, communicator_options

__all__ = [
    "__version__",
    "AbortedError",
    "Aggregation",
    "Algorithm",
    "CallbackStore",
    "CollectiveOptions",
    "CollectiveResult",
    "Communicator",
    "CommunicatorOptions",
    "ConnectError",
    "DeadlineError",
    "DlcpError",
    "FileStore",
    "HashStore",
    "InvalidArgumentError",
    "PeerLostError",
    "PrefixStore",
    "ProtocolError",
    "ReduceOp",
    "Store",
    "SystemCallError",
    "TcpStore",
    "TransportOptions",
    "Work",
    "collective_options",
    "communicator_options",
    "errors",
    "from_environment",
]
