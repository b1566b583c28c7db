"""A DDP communication hook that sends each bucket through dlcp, layer by layer.

    state = dlcp.torch.HookState(net, loss_budget=0.05)
    ddp = DistributedDataParallel(net)            # any process group: gloo, dlcp, ...
    ddp.register_comm_hook(state, dlcp.torch.comm_hook)

Each bucket is cut into per-layer slices; each slice is all-reduced (average) as its own dlcp
collective with its layer's priority class and loss budget, and the transport protects the
largest-magnitude packets of each (drop precedence, Options.protected_share). The hook runs
its own dlcp communicator over the ranks of DDP's process group, meeting through that group's
store, so it needs nothing from the group's backend.

It uses dlcp._core and torch's public Python API only (torch.futures.Future, the bucket's
tensor through numpy), so the same installed dlcp serves any torch whose Python API this uses;
tests/python/test_hook_abi.py checks it.
"""

import atexit
import itertools
import threading
import time
import weakref

import numpy as np
import torch
import torch.distributed as dist

from .. import _core
from ..errors import InvalidArgumentError
from ..options import collective_options, wire_dtype
from .jobs import CollectiveTotals
from .layers import bucket_slices, layer_budgets, layer_positions
from .metrics import per_item, share, summarize_totals
from .options import Options
from .store import dlcp_store

_instances = itertools.count()

# Every live hook state, so that interpreter exit leaves the job cleanly (peers then see a
# goodbye, not a lost connection) while Python can still run the completion callbacks.
_live_states = weakref.WeakSet()


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
    wire: how the gradients travel: 'fp32' (default), 'bf16' or 'fp16' (half the bytes; each
        rank's gradient is rounded once, the average is taken in float32 and rounded once more,
        identically on every rank).
    error_feedback: with a 16-bit wire, carry each bucket's rounding error into its next step
        (costs one float32 copy of the gradients).
    hadamard_rotation: rotate each slice before sending it and back after, so that a lost
        packet's error is spread thinly over the slice instead of zeroing a run of entries.
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
        wire="fp32",
        error_feedback=False,
        hadamard_rotation=False,
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
        # It goes into the hook's CollectiveOptions, whose validate() checks the range.
        collective_options(broadcast_loss_budget=broadcast_loss_budget)
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
        self.wire = wire_dtype("dlcp.torch.HookState: wire", wire)
        if error_feedback and self.wire == _core.WireDtype.fp32:
            raise InvalidArgumentError(
                "dlcp.torch.HookState: error_feedback needs wire='bf16' or 'fp16' (fp32 leaves "
                "no rounding error to feed back)"
            )
        self.error_feedback = bool(error_feedback)
        self._residuals = {}  # bucket's parameters -> its rounding error, with error feedback

        group = process_group or dist.distributed_c10d._get_default_group()
        prefix = f"dlcp_hook/{dist.distributed_c10d._pg_names.get(group, '')}/{next(_instances)}"
        store = dlcp_store(dist.PrefixStore(prefix, _store_of(group)))
        self._communicator = _core.Communicator(
            store, group.rank(), group.size(), options.communicator_options()
        )
        self._collective = options.collective_defaults()
        self._collective.op = _core.ReduceOp.average
        self._collective.broadcast_loss_budget = self.broadcast_loss_budget
        self._collective.wire = self.wire
        self._collective.hadamard_rotation = bool(hadamard_rotation)
        self._totals = CollectiveTotals()
        self._lock = threading.Lock()  # the totals and timers, updated by the callbacks
        _live_states.add(self)
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
        with self._lock:
            result = summarize_totals(self._totals)
            python_seconds = self.hook_seconds + self.callback_seconds
            result.update(
                buckets=self.buckets,
                python_seconds_per_bucket=per_item(python_seconds, self.buckets),
                transfer_seconds_per_bucket=per_item(self.bucket_seconds, self.buckets),
                python_share_of_transfer=share(python_seconds, self.bucket_seconds),
                resyncs=self.resyncs,
            )
        result["transport"] = self._communicator.counters()
        return result

    def reset_statistics(self):
        with self._lock:
            self._totals = CollectiveTotals()
            self.buckets = 0
            self.hook_seconds = self.callback_seconds = self.bucket_seconds = 0.0

    def close(self):
        """Waits for the bucket in flight, then leaves the job. Idempotent; also runs at exit."""
        self._communicator.close()

    def _residual(self, bucket, entries):
        """The bucket's error-feedback residual, or None without error feedback. Keyed by the
        bucket's parameters, as the slices are: zeros for a bucket not seen before, such as the
        ones DDP rebuilds after its first step."""
        if not self.error_feedback:
            return None
        key = tuple(p.data_ptr() for p in bucket.parameters())
        residual = self._residuals.get(key)
        if residual is None or residual.size != entries:
            residual = np.zeros(entries, dtype=np.float32)
            self._residuals[key] = residual
        return residual

    def _post(self, buffer, slices, posted, residual=None):
        """All-reduces the bucket's slices; the returned future carries `buffer` once done."""
        future = torch.futures.Future()
        lossy = sum(1 for _, _, _, budget in slices if budget > 0)

        def done(works):  # on the communicator's completion thread, holding the GIL
            finished = time.perf_counter()
            try:
                results = works.wait()
            except Exception as error:  # the collective's dlcp error, for DDP to raise
                future.set_exception(error)
                return
            with self._lock:
                self._totals.add(results, lossy)
                self.bucket_seconds += finished - posted
                self.callback_seconds += time.perf_counter() - finished
            future.set_result(buffer)

        self._communicator.allreduce_slices(
            buffer.numpy(), slices, self.num_layers, self._collective, done, residual
        )
        return future

    def resync(self):
        """Copies rank 0's parameters to every rank (loss-free); collective over the group."""
        reliable = _core.CollectiveOptions()
        works = []
        for parameter in self._module.parameters():
            staged = parameter.data.contiguous()
            raw = staged.view(-1).numpy().view(np.uint8)
            if raw.size % 4:
                raise InvalidArgumentError(
                    "dlcp.torch.HookState.resync: a parameter of "
                    f"{raw.size} bytes is not a whole number of 4-byte words"
                )
            works.append((parameter, staged, self._communicator.broadcast(
                raw.view(np.float32), 0, reliable)))
        for parameter, staged, work in works:
            work.wait()
            if staged.data_ptr() != parameter.data.data_ptr():
                parameter.data.copy_(staged)
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
    buffer = bucket.buffer()
    if buffer.dtype != torch.float32 or buffer.device.type != "cpu" or not buffer.is_contiguous():
        raise InvalidArgumentError(
            "dlcp.torch.comm_hook handles contiguous float32 CPU gradient buckets, got "
            f"{buffer.dtype} on {buffer.device}"
        )
    future = state._post(
        buffer, state.slices(bucket), start, state._residual(bucket, buffer.numel())
    )
    with state._lock:
        state.buckets += 1
        state.hook_seconds += time.perf_counter() - start
    return future


def _close_all():
    for state in list(_live_states):
        state.close()


atexit.register(_close_all)
