"""A DDP communication hook that sends each bucket through dlcp, layer by layer.

    state = dlcp.torch.HookState(net, loss_budget=0.05)
    ddp = DistributedDataParallel(net)            # any process group: gloo, dlcp, ...
    ddp.register_comm_hook(state, dlcp.torch.comm_hook)

Each bucket is cut into per-layer slices; each slice is all-reduced (average) as its own dlcp
collective with its layer's priority class and loss budget, and the transport protects the
largest-magnitude packets of each (drop precedence, Options.protected_share). The hook runs
its own dlcp communicator over the ranks of DDP's process group, meeting through that group's
store, so it needs nothing from the group's backend.
"""

import itertools
import time

import torch.distributed as dist

from .. import _torch
from ..errors import InvalidArgumentError
from . import backend
from .layers import bucket_slices, layer_budgets, layer_positions
from .metrics import per_item, share, summarize_totals
from .options import Options

_instances = itertools.count()


def _store_of(group):
    entry = dist.distributed_c10d._pg_map.get(group)
    if entry is None or entry[1] is None:
        raise InvalidArgumentError(
            "dlcp.torch.HookState: process_group has no store to meet through (MPI groups "
            "have none); pass a gloo or dlcp group"
        )
    return entry[1]


class HookState:
    """State of dlcp.torch.comm_hook for one DDP model.

    model: the module DDP wraps (or the DDP module); its parameter order gives layer positions.
    process_group: DDP's group (default: the default group); every rank of it must create its
        HookState in the same order.
    loss_budget: share of each layer's gradient contributions that may be lost: a number, one
        number per layer, or a function (layer, num_layers) -> number.
    broadcast_loss_budget: the same for the broadcast half of each all-reduce. Above 0 replicas
        may drift apart, so every `resync_every` training steps (default 50) rank 0's parameters
        are broadcast, loss-free, before the forward pass.
    options: dlcp.torch.Options for the transport (bind_host, drop_rate, protected_share, ...).
    """

    def __init__(
        self,
        model,
        process_group=None,
        loss_budget=0.0,
        broadcast_loss_budget=0.0,
        resync_every=None,
        options=None,
    ):
        module = getattr(model, "module", model)
        self._positions, self.num_layers = layer_positions(module)
        if self.num_layers == 0:
            raise InvalidArgumentError(
                "dlcp.torch.HookState: the model has no trainable parameters"
            )
        try:
            self.budgets = layer_budgets(loss_budget, self.num_layers)
        except ValueError as error:
            raise InvalidArgumentError(f"dlcp.torch.HookState: {error}") from None
        if not 0.0 <= broadcast_loss_budget <= 1.0:
            raise InvalidArgumentError(
                "dlcp.torch.HookState: broadcast_loss_budget must be within [0, 1], got "
                f"{broadcast_loss_budget}"
            )
        if resync_every is None:
            resync_every = 50 if broadcast_loss_budget > 0 else 0
        if resync_every < 0:
            raise InvalidArgumentError(
                f"dlcp.torch.HookState: resync_every must be >= 0, got {resync_every}"
            )
        options = Options() if options is None else options
        if not isinstance(options, Options):
            raise InvalidArgumentError(
                "dlcp.torch.HookState: options must be dlcp.torch.Options, got "
                f"{type(options).__name__}"
            )
        if options.loss_budget:
            raise InvalidArgumentError(
                "dlcp.torch.HookState: pass loss_budget to HookState, not in its Options"
            )
        self.broadcast_loss_budget = float(broadcast_loss_budget)
        self.resync_every = int(resync_every)

        group = process_group or dist.distributed_c10d._get_default_group()
        size = group.size()
        prefix = f"dlcp_hook/{dist.distributed_c10d._pg_names.get(group, '')}/{next(_instances)}"
        self.group = backend.track(
            _torch.ProcessGroupDlcp(
                dist.PrefixStore(prefix, _store_of(group)),
                group.rank(),
                size,
                options.build(size),
            )
        )
        self._module = module
        self._slices = {}
        self._steps = 0
        self.buckets = 0
        self.hook_seconds = 0.0  # in the hook itself, before the transfer starts
        self.callback_seconds = 0.0  # in the completion callback
        self.bucket_seconds = 0.0  # from the hook's start to the callback: the transfer
        self.resyncs = 0
        if self.resync_every:
            module.register_forward_pre_hook(self._maybe_resync)

    def slices(self, bucket):
        """The bucket's (offset, length, layer, budget) slices; cached, since DDP rebuilds its
        buckets once after the first step and keeps them afterwards."""
        parameters = bucket.parameters()
        key = tuple(p.data_ptr() for p in parameters)
        cached = self._slices.get(key)
        if cached is None:
            try:
                layers = [self._positions[id(p)] for p in parameters]
            except KeyError:
                raise InvalidArgumentError(
                    "dlcp.torch.HookState: a bucket holds a parameter that is not in the model "
                    "given to HookState (pass the module DDP wraps)"
                ) from None
            cached = bucket_slices(layers, [p.numel() for p in parameters], self.budgets)
            self._slices[key] = cached
        return cached

    def statistics(self):
        """Collective totals, delivered fraction and the Python time per bucket."""
        result = summarize_totals(self.group.totals())
        python_seconds = self.hook_seconds + self.callback_seconds
        result.update(
            buckets=self.buckets,
            python_seconds_per_bucket=per_item(python_seconds, self.buckets),
            transfer_seconds_per_bucket=per_item(self.bucket_seconds, self.buckets),
            python_share_of_transfer=share(python_seconds, self.bucket_seconds),
            resyncs=self.resyncs,
            transport=self.group.counters(),
        )
        return result

    def reset_statistics(self):
        self.group.reset_totals()
        self.buckets = 0
        self.hook_seconds = self.callback_seconds = self.bucket_seconds = 0.0

    def _finish(self, future, posted):
        start = time.perf_counter()
        result = future.value()[0]  # raises the collective's error, if any
        end = time.perf_counter()
        self.callback_seconds += end - start
        self.bucket_seconds += start - posted
        return result

    def resync(self):
        """Copies rank 0's parameters to every rank (loss-free); collective over the group."""
        tensors = [p.data for p in self._module.parameters()]
        self.group.broadcast_tensors(tensors, 0).wait()
        self.resyncs += 1

    def _maybe_resync(self, module, inputs):
        # Before the forward pass the optimizer step is done and no bucket is in flight.
        if not module.training:
            return
        self._steps += 1
        if self._steps % self.resync_every == 0:
            self.resync()


def comm_hook(state, bucket):
    """DDP communication hook: averages the bucket over the ranks through dlcp."""
    start = time.perf_counter()
    future = state.group.allreduce_slices(
        bucket.buffer(), state.slices(bucket), state.num_layers, True, state.broadcast_loss_budget
    )
    state.buckets += 1
    state.hook_seconds += time.perf_counter() - start
    return future.then(lambda done: state._finish(done, start))
