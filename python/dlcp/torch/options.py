"""Options of the dlcp backend and of the communication hook's communicator."""

from datetime import timedelta

from .. import _torch
from ..errors import InvalidArgumentError
from ..options import COMMUNICATOR_FIELDS, apply, communicator_options, validated
from .address import default_advertise_host, default_bind_host

PARAMETER_SERVER = ("ps", "parameter-server", "algorithm.ps")

BACKEND_FIELDS = {
    name: (name,)
    for name in (
        "loss_budget", "lossy_min_entries", "aggregation", "layer", "num_layers", "deadline_ms"
    )
}


class Options:
    """Settings of a dlcp process group::

        dist.init_process_group("dlcp", pg_options=dlcp.torch.Options(loss_budget=0.05))

    Backend keywords: loss_budget (share of a float all-reduce's contributions that may be
    lost, 0 = reliable), lossy_min_entries (smaller all-reduces stay loss-free, default 1024),
    aggregation ('unbiased' or 'zero_fill'), layer and num_layers (the priority class of the
    backend's all-reduces), deadline_ms (per transfer). Transport keywords: those of
    dlcp.communicator_options (bind_host, paths, mtu, protected_share, drop_rate, ...).
    bind_host defaults to DLCP_BIND_HOST, else the address that routes to MASTER_ADDR, else
    127.0.0.1; advertise_host to DLCP_ADVERTISE_HOST.
    """

    def __init__(self, **kwargs):
        unknown = sorted(set(kwargs) - set(BACKEND_FIELDS) - set(COMMUNICATOR_FIELDS))
        if unknown:
            valid = ", ".join(sorted(set(BACKEND_FIELDS) | set(COMMUNICATOR_FIELDS)))
            raise InvalidArgumentError(f"unknown dlcp.torch option {unknown[0]!r} (valid: {valid})")
        # Server ranks would have to call serve() instead of taking part in torch's collectives.
        if kwargs.get("servers") or str(kwargs.get("algorithm", "")).lower() in PARAMETER_SERVER:
            raise InvalidArgumentError(
                "dlcp.torch.Options: the parameter-server algorithm (servers, algorithm='ps') is "
                "not available to torch; use algorithm='ring' or 'tar'"
            )
        self._backend = {k: v for k, v in kwargs.items() if k in BACKEND_FIELDS}
        self._communicator = {k: v for k, v in kwargs.items() if k in COMMUNICATOR_FIELDS}
        # Fail here, where the options are written, rather than inside init_process_group.
        self.build(world_size=1, resolve_hosts=False)

    @property
    def loss_budget(self):
        return self._backend.get("loss_budget", 0.0)

    def without(self, *names):
        """A copy without the given keywords."""
        kwargs = {**self._backend, **self._communicator}
        for name in names:
            kwargs.pop(name, None)
        return Options(**kwargs)

    def build(self, world_size, timeout=None, resolve_hosts=True):
        """The C++ BackendOptions for a group of `world_size` ranks."""
        communicator = dict(self._communicator)
        if resolve_hosts:
            communicator.setdefault("bind_host", default_bind_host())
            communicator.setdefault("advertise_host", default_advertise_host())
        if timeout is not None and "connect_timeout_ms" not in communicator:
            if isinstance(timeout, timedelta):
                timeout = timeout.total_seconds()
            communicator["connect_timeout_ms"] = max(1, int(timeout * 1000))
        options = _torch.BackendOptions()
        options.communicator = communicator_options(**communicator)
        apply(options, BACKEND_FIELDS, self._backend, "dlcp.torch")
        validated(lambda: options.validate(world_size), "dlcp.torch.Options")
        return options

    def __repr__(self):
        settings = {**self._backend, **self._communicator}
        settings = ", ".join(f"{k}={v!r}" for k, v in settings.items())
        return f"dlcp.torch.Options({settings})"
