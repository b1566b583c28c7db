"""The Work a dlcp process group returns: a torch Work over a torch future that the
communicator's completion thread completes.

A Python future can carry an exception only as its value, which C++ callers (DDP's reducer)
would take for a result. So the completion thread completes a private future, and the future
torch sees is chained to it with `then`: a callback that raises marks the chained future failed
in C++, so DDP fails loudly with dlcp's message.

The Work is a Python subclass of torch's, whose `wait()` raises dlcp's own exception class
(dlcp.errors: PeerLostError, DeadlineError, ...). Torch 1.13 cannot hand a Python Work's future
to C++ callers ("Work::getFuture not implemented"), and its Work over a future does not raise
from `wait()`; so there a collective called through torch.distributed's Python functions gets
the Python Work, and one called from C++ (DDP's reducer) torch's Work over the chained future,
whose failure DDP raises.
"""

import os
import sys

import torch
from torch._C._distributed_c10d import Work, _create_work_from_future

# Torch >= 2.0 forwards C++ callers' getFuture() to a Python Work subclass (checked on 2.13).
PYTHON_WORK = int(torch.__version__.split(".")[0]) >= 2


def _unwrap(future):
    value = future.value()
    if isinstance(value, BaseException):
        raise value
    return value


class DlcpWork(Work):
    def __init__(self, source_rank=None):
        super().__init__()
        self._done = torch.futures.Future()
        self._future = self._done.then(_unwrap)
        self._source = source_rank  # recv from any source: a list the completion fills

    # Called on the completion thread, holding the GIL.
    def complete(self, value):
        self._done.set_result(value)

    def fail(self, error):
        self._done.set_result(error)

    def wait(self, timeout=None):
        value = self._done.wait()
        if isinstance(value, BaseException):
            raise value
        return True

    def get_future(self):
        return self._future

    def is_completed(self):
        return self._done.done()

    def is_success(self):
        return self._done.done() and not isinstance(self._done.value(), BaseException)

    def exception(self):
        value = self._done.value() if self._done.done() else None
        return value if isinstance(value, BaseException) else None

    def _source_rank(self):
        self.wait()
        if self._source is None:
            raise RuntimeError("dlcp: only a recv from any source has a source rank")
        return self._source[0]

    source_rank = _source_rank


_TORCH_API = os.path.join("torch", "distributed", "distributed_c10d.py")


def _called_through_torch_api():
    """Whether torch.distributed's Python functions are on the stack just above dlcp."""
    frame = sys._getframe(1)
    for _ in range(8):
        if frame is None:
            return False
        if frame.f_code.co_filename.endswith(_TORCH_API):
            return True
        frame = frame.f_back
    return False


def torch_work(work):
    """What the process group returns for `work`: itself, or on torch 1.13, for C++ callers,
    torch's Work over its chained future."""
    if PYTHON_WORK or _called_through_torch_api():
        return work
    return _create_work_from_future(work.get_future())


def completed_work():
    """A Work that is already done (the barrier's: it blocks the caller instead)."""
    work = DlcpWork()
    work.complete([])
    return torch_work(work)
