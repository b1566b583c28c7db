"""The `dlcp` torch.distributed backend: a Python ProcessGroup over one dlcp communicator.

It is a subclass of torch's ProcessGroup (torch's pybind trampoline forwards the calls that C++
makes, DDP's reducer among them, to these methods), so it depends on torch's Python API only and
the same installed dlcp serves torch 1.13 to 2.x. Each collective is posted to the communicator
at once (asynchronously, in call order) and returns a Work made from a torch future, which the
communicator's completion thread completes: DDP overlaps gradient transfers with the backward
pass as with gloo. Every call that waits or moves bytes runs in C++ with the GIL released.

Float SUM/AVG all-reduces and reduce-scatters of at least `lossy_min_entries` entries may lose up
to `loss_budget` of their contributions (unbiased) and may travel as 16-bit values; everything
else is loss-free and exact: other ops and dtypes are reduced here from every rank's tensor
gathered byte for byte (reduction.py). Torch renamed several methods over its versions; the
class answers to every name (`_allgather_base` and `all_gather_single`, ...).

The collectives are split by kind: this file (lifecycle, all-reduce, broadcast, all-gather,
barrier), sharded.py (reduce-scatter, all-to-all), rooted.py (reduce, gather, scatter) and
point_to_point.py (send, recv).
"""

import atexit
import threading
import weakref

import torch
import torch.distributed as dist

from .. import _core
from ..errors import AbortedError, InvalidArgumentError
from .jobs import CollectiveTotals, Job, combined
from .options import Options
from .point_to_point import PointToPoint
from .reduction import (
    check_reducible,
    on_float_path,
    op_name,
    premul_factor,
    reduce_op_of,
    reduce_parts,
    with_op,
)
from .rooted import RootedCollectives
from .sharded import ShardedCollectives
from .store import dlcp_store
from .work import DlcpWork, completed_work, torch_work
from .tensors import (
    TensorBuffer,
    only_tensor,
    padded_words,
    require_dense_cpu,
    unpack_bytes,
    word_tensor,
)

BACKEND_NAME = "dlcp"

# Every live dlcp process group, so that interpreter exit leaves the job cleanly (peers then see
# a goodbye, not a lost connection) while Python can still run the completion callbacks: a
# completion thread that asks for the GIL once the interpreter is finalizing is killed.
_live_groups = weakref.WeakSet()


def _shutdown_all():
    for group in list(_live_groups):
        group.shutdown()


atexit.register(_shutdown_all)


class ProcessGroupDlcp(RootedCollectives, ShardedCollectives, PointToPoint, dist.ProcessGroup):
    """A torch.distributed process group whose collectives run over dlcp."""

    def __init__(self, store, rank, size, options=None, timeout=None):
        """Joins the job through torch's `store` (collective over all `size` ranks).
        `options`: dlcp.torch.Options; `timeout`: the connect timeout (a timedelta)."""
        super().__init__(rank, size)
        options = Options() if options is None else options
        if not isinstance(options, Options):
            raise TypeError(
                f"dlcp: pg_options must be dlcp.torch.Options, got {type(options).__name__}"
            )
        self.options = options
        self._settings = options.backend_settings(size, timeout=timeout)
        self._rank = rank
        self._size = size
        self._group_name = ""
        self._group_desc = ""
        self._lock = threading.Lock()  # the totals, updated by the completion thread
        self._totals = CollectiveTotals()
        self._communicator = _core.Communicator(
            dlcp_store(store), rank, size, self._settings.communicator
        )
        _live_groups.add(self)

    # Torch's own ProcessGroup keeps rank and size. The backend name is pure virtual in torch
    # 1.13, and torch 2.x keeps a Python group's name and description only where the group does.
    def getBackendName(self):
        return BACKEND_NAME

    def getGroupName(self):
        return self._group_name

    def setGroupName(self, name):
        self._group_name = name

    def getGroupDesc(self):
        return self._group_desc

    def setGroupDesc(self, desc):
        self._group_desc = desc

    # -- bookkeeping ---------------------------------------------------------------------------

    def totals(self):
        with self._lock:
            totals = CollectiveTotals()
            totals.__dict__.update(self._totals.__dict__)
            return totals

    def reset_totals(self):
        with self._lock:
            self._totals = CollectiveTotals()

    def counters(self):
        return self._live("counters").counters()

    def shutdown(self):
        """Completes every posted collective, then leaves the job; later collectives raise.
        Idempotent; also run at interpreter exit."""
        communicator, self._communicator = self._communicator, None
        if communicator is not None:
            communicator.close()

    def abort(self):
        self.shutdown()

    def _live(self, what):
        if self._communicator is None:
            raise AbortedError(f"dlcp: {what} on a process group that was shut down")
        return self._communicator

    def _check_rank(self, rank, what):
        if not 0 <= rank < self._size:
            raise InvalidArgumentError(f"dlcp: {what} rank {rank} is outside the group of {self._size}")

    def _root_of(self, opts, what):
        root = 0 if opts is None else int(opts.rootRank)
        if getattr(opts, "rootTensor", 0) != 0:
            raise InvalidArgumentError(f"dlcp: {what} rootTensor must be 0")
        self._check_rank(root, f"{what} root")
        return root

    def _exact_options(self):
        """CollectiveOptions of exact, float32 collectives (everything but gradients)."""
        gradient = self._settings.gradient
        options = _core.CollectiveOptions()
        options.layer = gradient.layer
        options.num_layers = gradient.num_layers
        options.deadline_ms = gradient.deadline_ms
        return options

    def _post(self, job, value, work=None):
        """Queues `job` and returns a Work whose future carries `value` once it is done."""
        work = DlcpWork() if work is None else work
        finish, lossy = job.finish, job.lossy

        def done(works):  # on the completion thread, holding the GIL
            try:
                results = works.wait()
                if finish is not None:
                    finish(results)
            except Exception as error:  # the collective's dlcp error, for the caller
                work.fail(error)
                return
            with self._lock:
                self._totals.add(results, lossy)
            work.complete(value)

        self._live("collective").when_done(job.works, done)
        return torch_work(work)

    # -- reductions ----------------------------------------------------------------------------

    def _reduction_job(self, tensor, op, what, may_lose):
        """Reduces `tensor` in place over every rank: dlcp's float all-reduce for float
        SUM/AVG/PREMUL_SUM (with the loss budget if `may_lose` and the tensor is large enough),
        else exactly from the gathered tensors."""
        require_dense_cpu(tensor, what)
        name = op_name(op)
        check_reducible(name, tensor.dtype, what)
        factor = premul_factor(op) if name == "PREMUL_SUM" else 1.0
        if tensor.numel() == 0:
            return Job()  # every rank's is empty: nothing to move
        if not on_float_path(name, tensor.dtype):
            target = tensor.detach()

            def use(parts):
                target.copy_(reduce_parts(parts, name, factor))

            return self._gather_job(target, what, use)
        buffer = TensorBuffer.for_reduction(tensor, what)
        settings = self._settings
        gradient_sized = may_lose and tensor.numel() >= settings.lossy_min_entries
        options = settings.gradient if gradient_sized else self._exact_options()
        lossy = gradient_sized and settings.gradient.loss_budget > 0
        options = with_op(options, name)
        work = self._live(what).allreduce(buffer.floats, options)

        def finish(results):
            if name == "PREMUL_SUM":
                buffer.floats *= factor  # the factor distributes over the sum
            buffer.finish()

        return Job([work], finish, 1 if lossy else 0)

    def _gather_job(self, tensor, what, use):
        """An exact all-gather of `tensor`'s bytes; `use(parts)` receives every rank's tensor
        (its dtype and shape, rank r's at r) on the completion thread."""
        require_dense_cpu(tensor, what)
        source = TensorBuffer.for_bytes(tensor, what)
        words = padded_words(tensor)
        gathered, gathered_floats = word_tensor(words * self._size)
        works = []
        if words:  # every rank's input has the same size
            works.append(
                self._live(what).allgather(source.floats, gathered_floats, self._exact_options())
            )
        like = tensor.detach()

        def finish(results):
            parts = [
                unpack_bytes(gathered[rank * words : (rank + 1) * words], like)
                for rank in range(self._size)
            ]
            use(parts)

        return Job(works, finish)

    # -- the collectives -----------------------------------------------------------------------

    def allreduce(self, tensors, opts=None):
        if isinstance(tensors, torch.Tensor):
            tensors = [tensors]
        tensor = only_tensor(tensors, "all_reduce")
        op = reduce_op_of(opts)
        return self._post(self._reduction_job(tensor, op, "all_reduce", True), [tensor])

    def allreduce_coalesced(self, tensors, opts=None):
        op = reduce_op_of(opts)
        jobs = [
            self._reduction_job(t, op, "all_reduce_coalesced", True) for t in tensors
        ]
        return self._post(combined(jobs), list(tensors))

    def broadcast(self, tensors, opts=None):
        if isinstance(tensors, torch.Tensor):
            tensors = [tensors]
        tensor = only_tensor(tensors, "broadcast")
        root = self._root_of(opts, "broadcast")
        buffer = TensorBuffer.for_bytes(tensor, "broadcast tensor")
        works = []
        if tensor.numel():
            works.append(
                self._live("broadcast").broadcast(buffer.floats, root, self._exact_options())
            )
        return self._post(Job(works, lambda results: buffer.finish()), [tensor])

    def allgather(self, output_tensors, input_tensors, opts=None):
        tensor = only_tensor(input_tensors, "all_gather")
        if len(output_tensors) != 1:
            raise InvalidArgumentError(
                f"dlcp: all_gather takes one output list per rank, got {len(output_tensors)}"
            )
        targets = list(output_tensors[0])
        self._check_per_rank(targets, tensor, "all_gather output")
        return self._post(self._allgather_job(targets, tensor, "all_gather"), targets)

    def allgather_coalesced(self, output_lists, input_tensors, opts=None):
        jobs = []
        for targets, tensor in zip(output_lists, input_tensors, strict=True):
            require_dense_cpu(tensor, "all_gather_coalesced input")
            self._check_per_rank(list(targets), tensor, "all_gather_coalesced output")
            jobs.append(self._allgather_job(list(targets), tensor, "all_gather_coalesced"))
        return self._post(combined(jobs), [t for targets in output_lists for t in targets])

    def _check_per_rank(self, tensors, like, what):
        """Raises unless `tensors` holds one CPU tensor per rank, each of `like`'s dtype and
        size."""
        if len(tensors) != self._size:
            raise InvalidArgumentError(
                f"dlcp: {what} needs {self._size} tensors (one per rank), got {len(tensors)}"
            )
        for tensor in tensors:
            require_dense_cpu(tensor, what)
            if tensor.dtype != like.dtype or tensor.numel() != like.numel():
                raise InvalidArgumentError(
                    f"dlcp: every {what} tensor must match the {like.dtype} tensor of "
                    f"{like.numel()} entries"
                )

    def _allgather_job(self, targets, tensor, what):
        def use(parts):
            for target, part in zip(targets, parts):
                target.detach().copy_(part.reshape(target.shape))

        return self._gather_job(tensor, what, use)

    def _allgather_base(self, output, input, opts=None):
        return self._all_gather_into(output, input, "all_gather_into_tensor")

    def all_gather_single(self, output, input, opts=None):
        return self._all_gather_into(output, input, "all_gather_single")

    def all_gather_into_tensor(self, output, input, opts=None):
        return self._all_gather_into(output, input, "all_gather_into_tensor")

    def _all_gather_into(self, output, input, what):
        return self._post(self._all_gather_into_job(output, input, what), [output])

    def allgather_into_tensor_coalesced(self, outputs, inputs, opts=None):
        jobs = [
            self._all_gather_into_job(output, input, "all_gather_into_tensor_coalesced")
            for output, input in zip(outputs, inputs, strict=True)
        ]
        return self._post(combined(jobs), list(outputs))

    all_gather_single_coalesced = allgather_into_tensor_coalesced

    def barrier(self, opts=None):
        """Blocks until every rank arrives: ranks must see collectives in one order, so the
        barrier runs on the calling thread (the returned Work is already complete)."""
        self._live("barrier").barrier()
        return completed_work()

    def monitored_barrier(self, timeout=None, wait_all_ranks=False):
        self.barrier()
