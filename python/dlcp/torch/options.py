"""Options of the dlcp backend and of the communication hook's communicator."""

from datetime import timedelta

from ..errors import InvalidArgumentError
from ..options import (
    COMMUNICATOR_FIELDS,
    collective_options,
    communicator_options,
    invalid_option,
)
from .address import default_advertise_host, default_bind_host

PARAMETER_SERVER = ("ps", "parameter-server", "algorithm.ps")

BACKEND_FIELDS = {
    name: (name,)
    for name in (
        "loss_budget", "lossy_min_entries", "aggregation", "layer", "num_layers", "deadline_ms",
        "wire", "hadamard_rotation",
    )
}


class BackendSettings:
    """What a dlcp process group runs with: the communicator's options, the CollectiveOptions
    of its gradient-sized reductions (float SUM/AVG all-reduces and reduce-scatters of at least
    `lossy_min_entries` entries: loss budget, wire dtype, rotation, priority class), and that
    threshold. Every other collective is exact and float32."""

    def __init__(self, communicator, gradient, lossy_min_entries):
        self.communicator = communicator
        self.gradient = gradient
        self.lossy_min_entries = lossy_min_entries


class Options:
    """Settings of a dlcp process group::

        dist.init_process_group("dlcp", pg_options=dlcp.torch.Options(loss_budget=0.05))

    Backend keywords: loss_budget (share of a float all-reduce's contributions that may be
    lost, 0 = reliable), lossy_min_entries (smaller all-reduces stay loss-free, default 1024),
    aggregation ('unbiased' or 'zero_fill'), layer and num_layers (the priority class of the
    backend's all-reduces), deadline_ms (per transfer), wire ('fp32', 'bf16' or 'fp16': how
    float all-reduces and reduce-scatters of at least lossy_min_entries entries travel) and
    hadamard_rotation (on the same). Error feedback needs the communication hook. Transport keywords: those of
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
        if kwargs.get("servers"):
            invalid_option(
                "dlcp.torch.Options.servers",
                "must be 0 (torch has no parameter-server ranks)",
                kwargs["servers"],
            )
        if str(kwargs.get("algorithm", "")).lower() in PARAMETER_SERVER:
            invalid_option(
                "dlcp.torch.Options.algorithm",
                "must be 'ring' or 'tar' (the parameter-server algorithm is not available to "
                "torch)",
                kwargs["algorithm"],
            )
        self._backend = {k: v for k, v in kwargs.items() if k in BACKEND_FIELDS}
        self._communicator = {k: v for k, v in kwargs.items() if k in COMMUNICATOR_FIELDS}
        # Fail here, where the options are written, rather than inside init_process_group.
        self.backend_settings(world_size=1, resolve_hosts=False)

    @property
    def loss_budget(self):
        return self._backend.get("loss_budget", 0.0)

    def without(self, *names):
        """A copy without the given keywords."""
        kwargs = {**self._backend, **self._communicator}
        for name in names:
            kwargs.pop(name, None)
        return Options(**kwargs)

    def communicator_options(self, timeout=None, resolve_hosts=True):
        """The CommunicatorOptions (dlcp._core): the transport's keywords, with the hosts
        resolved and `timeout` (seconds or a timedelta) as the connect timeout."""
        communicator = dict(self._communicator)
        if resolve_hosts:
            communicator.setdefault("bind_host", default_bind_host())
            communicator.setdefault("advertise_host", default_advertise_host())
        if timeout is not None and "connect_timeout_ms" not in communicator:
            if isinstance(timeout, timedelta):
                timeout = timeout.total_seconds()
            communicator["connect_timeout_ms"] = max(1, int(timeout * 1000))
        return communicator_options(**communicator)

    def collective_defaults(self):
        """The hook's CollectiveOptions (dlcp._core) from aggregation and deadline_ms; the hook
        sets layer, budget and op per slice."""
        fields = {k: v for k, v in self._backend.items() if k in ("aggregation", "deadline_ms")}
        return collective_options(**fields)

    def backend_settings(self, world_size, timeout=None, resolve_hosts=True):
        """The backend's validated settings (BackendSettings) for a group of `world_size`."""
        fields = dict(self._backend)
        lossy_min_entries = fields.pop("lossy_min_entries", 1024)
        if not isinstance(lossy_min_entries, int) or lossy_min_entries < 0:
            invalid_option(
                "dlcp.torch.Options.lossy_min_entries", "must be an integer >= 0", lossy_min_entries
            )
        communicator = self.communicator_options(timeout, resolve_hosts)
        communicator.validate(world_size)
        # The rest are CollectiveOptions fields (loss_budget, layer, num_layers, aggregation,
        # deadline_ms, wire, hadamard_rotation): the C++ checks name them.
        gradient = collective_options(**fields)
        return BackendSettings(communicator, gradient, lossy_min_entries)

    def __repr__(self):
        settings = {**self._backend, **self._communicator}
        settings = ", ".join(f"{k}={v!r}" for k, v in settings.items())
        return f"dlcp.torch.Options({settings})"
