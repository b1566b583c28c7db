"""PyTorch integration of dlcp (docs/pytorch.md).

``import dlcp.torch`` registers the ``dlcp`` torch.distributed backend::

    import torch.distributed as dist
    import dlcp.torch
    dist.init_process_group("dlcp", pg_options=dlcp.torch.Options(loss_budget=0.05))

and provides a DDP communication hook that works over any process group::

    state = dlcp.torch.HookState(net, loss_budget=0.05)
    ddp.register_comm_hook(state, dlcp.torch.comm_hook)

The backend is the libtorch extension dlcp._torch; the hook needs only dlcp._core and torch's
Python API, so it works where the extension is not built or was built for another torch
(``BACKEND_AVAILABLE`` says which).
"""

import torch.distributed  # noqa: F401  (loads libtorch and its c10d types before _torch)

from . import metrics
from .backend import BACKEND_NAME, create_process_group, register, statistics
from .hook import HookState, comm_hook
from .options import Options, _backend_extension

BACKEND_AVAILABLE = _backend_extension() is not None
if BACKEND_AVAILABLE:
    ProcessGroupDlcp = _backend_extension().ProcessGroupDlcp

register()

__all__ = [
    "BACKEND_AVAILABLE",
    "BACKEND_NAME",
    "HookState",
    "Options",
    "comm_hook",
    "create_process_group",
    "metrics",
    "statistics",
] + (["ProcessGroupDlcp"] if BACKEND_AVAILABLE else [])
