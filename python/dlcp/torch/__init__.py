"""PyTorch integration of dlcp (docs/pytorch.md), for torch 1.13 to 2.x.

``import dlcp.torch`` registers the ``dlcp`` torch.distributed backend::

    import torch.distributed as dist
    import dlcp.torch
    dist.init_process_group("dlcp", pg_options=dlcp.torch.Options(loss_budget=0.05))

and provides a DDP communication hook that works over any process group::

    state = dlcp.torch.HookState(net, loss_budget=0.05)
    ddp.register_comm_hook(state, dlcp.torch.comm_hook)

Both use dlcp._core and torch's Python API only (no libtorch ABI), so the same installed dlcp
serves whichever torch the interpreter has.
"""

from . import metrics
from .backend import create_process_group, register, statistics
from .hook import HookState, comm_hook
from .options import Options
from .process_group import BACKEND_NAME, ProcessGroupDlcp

# Kept for scripts written against earlier releases, where the backend was an optional
# libtorch extension: it is always available now.
BACKEND_AVAILABLE = True

register()

__all__ = [
    "BACKEND_AVAILABLE",
    "BACKEND_NAME",
    "HookState",
    "Options",
    "ProcessGroupDlcp",
    "comm_hook",
    "create_process_group",
    "metrics",
    "statistics",
]
