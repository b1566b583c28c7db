"""Keyword-argument constructors for the C++ option structs, with errors that name the option.

Every name is flat (``bind_host=...``, ``drop_rate=...``); the table below says where it lives
in the nested C++ structs. Unknown names, wrong types and out-of-range values all raise
:class:`dlcp.errors.InvalidArgumentError` (a ``ValueError``) naming the option.
"""

from . import _core
from .errors import InvalidArgumentError

# Flat option name -> attribute path inside CommunicatorOptions.
COMMUNICATOR_FIELDS = {
    "algorithm": ("algorithm",),
    "servers": ("servers",),
    "segment_bytes": ("segment_bytes",),
    "concurrent_collectives": ("concurrent_collectives",),
    "store_prefix": ("store_prefix",),
    "topology": ("topology",),
    "host_id": ("host_id",),
    "advertise_host": ("advertise_host",),
    "bind_host": ("transport", "bind_host"),
    "control_port": ("transport", "control_port"),
    "local_addresses": ("transport", "local_addresses"),
    "paths": ("transport", "paths"),
    "mtu": ("transport", "mtu"),
    "socket_buffer_bytes": ("transport", "socket_buffer_bytes"),
    "batch": ("transport", "batch"),
    "backlog_bytes": ("transport", "backlog_bytes"),
    "connect_timeout_ms": ("transport", "connect_timeout_ms"),
    "early_arrival_ttl_ms": ("transport", "early_arrival_ttl_ms"),
    "feedback_interval_us": ("transport", "feedback_interval_us"),
    "quiet_before_report_us": ("transport", "quiet_before_report_us"),
    "parity_members": ("transport", "parity_members"),
    "local_path": ("transport", "local_path"),
    "protected_share": ("transport", "policy", "protected_share"),
    "initial_rate": ("transport", "rate", "initial_rate"),
    "min_rate": ("transport", "rate", "min_rate"),
    "max_rate": ("transport", "rate", "max_rate"),
    "receive_rate": ("transport", "rate", "receive_rate"),
    "shared_band_pacing": ("transport", "rate", "shared_band_pacing"),
    "drop_rate": ("transport", "inject", "drop_rate"),
    "mean_burst_length": ("transport", "inject", "mean_burst_length"),
    "drop_seed": ("transport", "inject", "seed"),
}

COLLECTIVE_FIELDS = {
    name: (name,)
    for name in (
        "layer",
        "num_layers",
        "loss_budget",
        "broadcast_loss_budget",
        "op",
        "aggregation",
        "algorithm",
        "topology",
        "deadline_ms",
        "wire",
        "hadamard_rotation",
    )
}

_OPS = {"sum": _core.ReduceOp.sum, "average": _core.ReduceOp.average, "avg": _core.ReduceOp.average}
_AGGREGATIONS = {"unbiased": _core.Aggregation.unbiased, "zero_fill": _core.Aggregation.zero_fill}


def _choice(name, value, choices, enum_type):
    if isinstance(value, enum_type):
        return value
    if isinstance(value, str) and value.lower() in choices:
        return choices[value.lower()]
    raise InvalidArgumentError(f"{name}={value!r} is not one of {', '.join(sorted(choices))}")


def _algorithm(name, value):
    if value is None or isinstance(value, _core.Algorithm):
        return value
    try:
        return _core.parse_algorithm(str(value))
    except ValueError as error:
        raise InvalidArgumentError(f"{name}={value!r}: {error}") from None


def _topology(name, value):
    if value is None or isinstance(value, _core.Topology):
        return value
    try:
        return _core.parse_topology(str(value))
    except ValueError as error:
        raise InvalidArgumentError(f"{name}={value!r}: {error}") from None


def wire_dtype(name, value):
    """A _core.WireDtype from 'fp32'/'bf16'/'fp16' (or the enum); the error names `name`."""
    if isinstance(value, _core.WireDtype):
        return value
    try:
        return _core.parse_wire_dtype(str(value))
    except ValueError as error:
        raise InvalidArgumentError(f"{name}={value!r}: {error}") from None


def _convert(name, value):
    if name == "algorithm":
        return _algorithm(name, value)
    if name == "topology":
        return _topology(name, value)
    if name == "wire":
        return wire_dtype(name, value)
    if name == "op":
        return _choice(name, value, _OPS, _core.ReduceOp)
    if name == "aggregation":
        return _choice(name, value, _AGGREGATIONS, _core.Aggregation)
    return value


def apply(target, fields, kwargs, what):
    """Sets each keyword on `target` along its path in `fields`; names the culprit on error."""
    for name, value in kwargs.items():
        if name not in fields:
            raise InvalidArgumentError(
                f"unknown {what} option {name!r} (valid: {', '.join(sorted(fields))})"
            )
        *parents, leaf = fields[name]
        owner = target
        for parent in parents:
            owner = getattr(owner, parent)
        try:
            setattr(owner, leaf, _convert(name, value))
        except TypeError:
            expected = type(getattr(owner, leaf)).__name__
            raise InvalidArgumentError(
                f"{what} option {name}={value!r} has the wrong type (expected {expected})"
            ) from None
    return target


def invalid_option(option, requirement, value):
    """Raises InvalidArgumentError in the C++ validate()'s form (src/common/invalid_option.hpp):
    "<Struct>.<field> <requirement>, got <value>", for the options only Python checks."""
    raise InvalidArgumentError(f"{option} {requirement}, got {value!r}")


def communicator_options(**kwargs):
    """A CommunicatorOptions from flat keywords (see COMMUNICATOR_FIELDS)."""
    options = apply(_core.CommunicatorOptions(), COMMUNICATOR_FIELDS, kwargs, "communicator")
    options.transport.validate()
    return options


def collective_options(**kwargs):
    """A CollectiveOptions from keywords: layer, num_layers, loss_budget, broadcast_loss_budget,
    op ('sum' or 'average'), aggregation ('unbiased' or 'zero_fill'), algorithm, topology
    ('auto', 'flat' or 'hierarchical'), deadline_ms,
    wire ('fp32', 'bf16' or 'fp16': all-reduce only) and hadamard_rotation (all-reduce only)."""
    options = apply(_core.CollectiveOptions(), COLLECTIVE_FIELDS, kwargs, "collective")
    options.validate()
    return options
