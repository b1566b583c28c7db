"""Collectives with a root: reduce, gather and scatter. All exact (no loss budget): they carry
results and metrics, not gradients. A mixin of ProcessGroupDlcp (process_group.py)."""

import torch

from ..errors import InvalidArgumentError
from .jobs import Job
from .reduction import reduce_op_of
from .tensors import only_tensor, pack_bytes, padded_words, unpack_bytes


class RootedCollectives:
    def reduce(self, tensors, opts=None):
        tensor = only_tensor(tensors, "reduce")
        root = self._root_of(opts, "reduce")
        # Reduced on a copy everywhere: only the root's tensor changes.
        result = tensor.detach().clone().contiguous()
        job = self._reduction_job(result, reduce_op_of(opts), "reduce", False)
        if self._rank == root:
            inner, target = job.finish, tensor.detach()

            def finish(results):
                if inner is not None:
                    inner(results)
                target.copy_(result)

            job = Job(job.works, finish, job.lossy)
        return self._post(job, [tensor])

    def gather(self, output_lists, input_tensors, opts=None):
        tensor = only_tensor(input_tensors, "gather input")
        root = self._root_of(opts, "gather")
        targets = []
        if self._rank == root:
            if len(output_lists) != 1 or len(output_lists[0]) != self._size:
                raise InvalidArgumentError(
                    f"dlcp: gather needs one list of {self._size} output tensors on the root"
                )
            targets = list(output_lists[0])
            self._check_per_rank(targets, tensor, "gather output")
        elif output_lists and (len(output_lists) != 1 or len(output_lists[0])):
            raise InvalidArgumentError("dlcp: gather takes output tensors on the root only")

        def use(parts):
            for target, part in zip(targets, parts):
                target.detach().copy_(part.reshape(target.shape))

        return self._post(self._gather_job(tensor, "gather", use), targets)

    def scatter(self, output_tensors, input_lists, opts=None):
        output = only_tensor(output_tensors, "scatter output")
        root = self._root_of(opts, "scatter")
        words = padded_words(output)
        if self._rank == root:
            if len(input_lists) != 1:
                raise InvalidArgumentError("dlcp: scatter needs one list of input tensors on the root")
            self._check_per_rank(list(input_lists[0]), output, "scatter input")
            staging = torch.cat([pack_bytes(source, words) for source in input_lists[0]])
        else:
            if input_lists and (len(input_lists) != 1 or len(input_lists[0])):
                raise InvalidArgumentError("dlcp: scatter takes input tensors on the root only")
            staging = torch.zeros(words * self._size)
        works = []
        if words:
            works.append(
                self._live("scatter").broadcast(staging.numpy(), root, self._exact_options())
            )
        rank, target = self._rank, output.detach()

        def finish(results):
            if words:
                target.copy_(unpack_bytes(staging[rank * words : (rank + 1) * words], target))

        return self._post(Job(works, finish), [output])

