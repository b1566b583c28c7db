"""Point-to-point: send, recv and recv from any source over the communicator's loss-free
transfers, matched by peer and tag in posting order. A mixin of ProcessGroupDlcp."""

from ..errors import InvalidArgumentError
from .jobs import Job
from .tensors import TensorBuffer, only_tensor
from .work import DlcpWork


class PointToPoint:
    def _peer(self, rank, what):
        self._check_rank(rank, what)
        if rank == self._rank:
            raise InvalidArgumentError(f"dlcp: {what} is this rank itself ({rank})")
        return rank

    def send(self, tensors, dst_rank, tag=0):
        tensor = only_tensor(tensors, "send")
        peer = self._peer(dst_rank, "send destination")
        buffer = TensorBuffer.for_bytes(tensor, "send tensor")
        work = self._live("send").send(buffer.floats, peer, int(tag), self._exact_options())
        return self._post(Job([work]), [tensor])

    def recv(self, tensors, src_rank, tag=0):
        tensor = only_tensor(tensors, "recv")
        peer = self._peer(src_rank, "recv source")
        buffer = TensorBuffer.for_bytes(tensor, "recv tensor")
        work = self._live("recv").recv(buffer.floats, peer, int(tag), self._exact_options())
        return self._post(Job([work], lambda results: buffer.finish()), [tensor])

    def recv_anysource(self, tensors, tag=0):
        tensor = only_tensor(tensors, "recv")
        buffer = TensorBuffer.for_bytes(tensor, "recv tensor")
        work = self._live("recv").recv_any(buffer.floats, int(tag), self._exact_options())
        source = []

        def finish(results):
            buffer.finish()
            source.append(results[0].source)

        # Only Python calls this (dist.recv with no source), so the Python Work that can tell
        # its source serves every torch.
        with_source = DlcpWork(source_rank=source)
        self._post(Job([work], finish), [tensor], with_source)
        return with_source

    recvAnysource = recv_anysource
