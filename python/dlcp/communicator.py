"""The communicator for Python: collectives over float32 numpy arrays (or any float32 buffer).

    import numpy as np, dlcp
    store = dlcp.TcpStore.serve_or_connect("127.0.0.1", 29500, rank == 0)
    comm = dlcp.Communicator(store, rank, world_size)
    grads = np.ones(1 << 20, dtype=np.float32)
    result = comm.allreduce(grads, layer=3, num_layers=50, loss_budget=0.05, op="average").wait()
    print(result.delivered_fraction)

Collectives run asynchronously; every rank must issue them in the same order. The buffers stay
referenced until the collective is done, even if the Work handle is dropped.
"""

from . import _core
from .options import collective_options, communicator_options


class Communicator:
    def __init__(self, store, rank, world_size, options=None, **kwargs):
        """Joins the job (collective over all ranks). `options` is a CommunicatorOptions, or pass
        its fields as keywords (see dlcp.options.COMMUNICATOR_FIELDS)."""
        if options is not None and kwargs:
            raise TypeError("pass either options= or option keywords, not both")
        if options is None:
            options = communicator_options(**kwargs)
        self._impl = _core.Communicator(store, rank, world_size, options)

    @property
    def rank(self):
        return self._impl.rank

    @property
    def size(self):
        return self._impl.size

    @property
    def is_server(self):
        return self._impl.is_server

    def allreduce(self, values, error_feedback=None, **options):
        """In-place all-reduce of a float32 buffer; keywords as dlcp.collective_options
        (wire='bf16' or 'fp16' halves the bytes sent). error_feedback: with a 16-bit wire, a
        float32 buffer of len(values) zeros kept per tensor, which carries each call's rounding
        error into the next."""
        return self._impl.allreduce(values, collective_options(**options), error_feedback)

    def broadcast(self, values, root, **options):
        return self._impl.broadcast(values, root, collective_options(**options))

    def allgather(self, input, output, **options):
        """output (world size x len(input) floats) = every rank's input, in rank order."""
        return self._impl.allgather(input, output, collective_options(**options))

    def reduce_scatter(self, input, output, error_feedback=None, **options):
        """output = this rank's shard of the sum (or average) of every rank's input, which holds
        world size x len(output) floats, shard r at [r * len(output), (r + 1) * len(output)).
        Each rank sends (world size - 1) / world size of its input; keywords as allreduce."""
        return self._impl.reduce_scatter(input, output, collective_options(**options),
                                         error_feedback)

    def barrier(self):
        self._impl.barrier()

    def serve(self):
        """Parameter-server ranks: serve until every worker is gone."""
        self._impl.serve()

    def counters(self):
        return self._impl.counters()

    def close(self):
        """Waits for every collective and leaves the job. Idempotent."""
        self._impl.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
