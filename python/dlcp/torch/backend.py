"""The `dlcp` torch.distributed backend: registration and bookkeeping.

The backend is ProcessGroupDlcp (process_group.py), a Python process group over dlcp._core that
uses torch's Python API only, so one installed dlcp serves every torch from 1.13 to 2.x."""

import inspect

import torch.distributed as dist

from .metrics import summarize_totals
from .options import Options
from .process_group import BACKEND_NAME, ProcessGroupDlcp

def create_process_group(backend_options, pg_options):
    """The creator torch.distributed calls for init_process_group("dlcp") and new_group."""
    options = Options() if pg_options is None else pg_options
    if not isinstance(options, Options):
        raise TypeError(
            f"dlcp: pg_options must be dlcp.torch.Options, got {type(options).__name__}"
        )
    return ProcessGroupDlcp(
        backend_options.store,
        backend_options.group_rank,
        backend_options.group_size,
        options,
        timeout=backend_options.timeout,
    )


def register():
    """Registers the backend once per process (importing dlcp.torch does it): for CPU tensors
    only where torch asks (>= 2.1), so that a CUDA tensor is refused by name."""
    if BACKEND_NAME.upper() in dist.Backend._plugins:
        return
    keywords = {"extended_api": True}
    if "devices" in inspect.signature(dist.Backend.register_backend).parameters:
        keywords["devices"] = ["cpu"]
    dist.Backend.register_backend(BACKEND_NAME, create_process_group, **keywords)


def statistics(group=None):
    """Collective totals of a dlcp process group (default: the default group) as a dict with
    the delivered fraction of gradient contributions, and the transport's counters."""
    if group is None:
        group = dist.distributed_c10d._get_default_group()
    if not isinstance(group, ProcessGroupDlcp):
        raise TypeError(
            f"dlcp: statistics() needs a dlcp process group, got {type(group).__name__}"
        )
    result = summarize_totals(group.totals())
    result["transport"] = group.counters()
    return result
