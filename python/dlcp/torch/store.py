"""torch's rendezvous store as a dlcp store, through torch's public Python API only.

dlcp._core.CallbackStore calls these methods (holding the GIL) from the communicator's threads,
so the communication hook meets its peers through DDP's own store with no libtorch ABI in
between.
"""

from datetime import timedelta

from .. import _core


class TorchStoreMethods:
    """set/get/add/check/wait, as dlcp.CallbackStore calls them, over a torch.distributed Store."""

    def __init__(self, store):
        self._store = store

    def set(self, key, value):
        self._store.set(key, value)

    def get(self, key):
        return bytes(self._store.get(key))

    def add(self, key, delta):
        return int(self._store.add(key, delta))

    def check(self, keys):
        check = getattr(self._store, "check", None)
        if check is not None:  # torch >= 2.0
            return bool(check(keys))
        try:  # torch 1.13's Python Store has no check(): wait briefly instead
            self._store.wait(keys, timedelta(milliseconds=1))
            return True
        except RuntimeError:
            return False

    def wait(self, keys, timeout_ms):
        self._store.wait(keys, timedelta(milliseconds=timeout_ms))


def dlcp_store(store):
    """A dlcp store over a torch.distributed Store, with the same timeout."""
    timeout = getattr(store, "timeout", None)
    timeout_ms = int(timeout.total_seconds() * 1000) if timeout is not None else 300000
    return _core.CallbackStore(TorchStoreMethods(store), max(1, timeout_ms))
