"""The `dlcp` torch.distributed backend: registration and bookkeeping.

The backend itself is the libtorch extension dlcp._torch (a c10d::ProcessGroup built against the
torch it was compiled with). Where it is missing or does not load, "dlcp" is still registered,
and creating a group says why it cannot; the communication hook does not need it."""

import atexit
import weakref

import torch.distributed as dist

from .metrics import summarize_totals
from .options import Options, _backend_extension

BACKEND_NAME = "dlcp"

# Every live dlcp process group, so that interpreter exit can leave the job cleanly (peers then
# see a goodbye, not a lost connection) while Python can still run the futures' callbacks.
_live_groups = weakref.WeakSet()


def create_process_group(backend_options, pg_options):
    """The creator torch.distributed calls for init_process_group("dlcp") and new_group."""
    options = Options() if pg_options is None else pg_options
    if not isinstance(options, Options):
        raise TypeError(
            f"dlcp: pg_options must be dlcp.torch.Options, got {type(options).__name__}"
        )
    built = options.build(backend_options.group_size, timeout=backend_options.timeout)
    group = _backend_extension().ProcessGroupDlcp(
        backend_options.store, backend_options.group_rank, backend_options.group_size, built
    )
    _live_groups.add(group)
    return group


def register():
    """Registers the backend once per process (importing dlcp.torch does it)."""
    if BACKEND_NAME.upper() not in dist.Backend._plugins:
        dist.Backend.register_backend(BACKEND_NAME, create_process_group, extended_api=True)


def statistics(group=None):
    """Collective totals of a dlcp process group (default: the default group) as a dict with
    the delivered fraction of gradient contributions, and the transport's counters."""
    if group is None:
        group = dist.distributed_c10d._get_default_group()
    extension = _backend_extension()
    if extension is None or not isinstance(group, extension.ProcessGroupDlcp):
        raise TypeError(
            f"dlcp: statistics() needs a dlcp process group, got {type(group).__name__}"
        )
    result = summarize_totals(group.totals())
    result["transport"] = group.counters()
    return result


def _shutdown_all():
    for group in list(_live_groups):
        group.shutdown()


atexit.register(_shutdown_all)
