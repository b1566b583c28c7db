"""Collectives that shard or gather into one tensor: reduce-scatter (FSDP's and ZeRO's gradient
step, which may carry the loss budget), all-gather into a tensor (their parameters, loss-free)
and all-to-all (exact). A mixin of ProcessGroupDlcp (process_group.py)."""

import torch

from ..errors import InvalidArgumentError
from .jobs import Job, combined
from .reduction import (
    check_reducible,
    on_float_path,
    op_name,
    premul_factor,
    reduce_op_of,
    reduce_parts,
    with_op,
)
from .tensors import TensorBuffer, only_tensor, require_dense_cpu


class ShardedCollectives:
    # -- all-gather into one tensor ------------------------------------------------------------

    def _all_gather_into_job(self, output, input, what):
        require_dense_cpu(output, f"{what} output")
        require_dense_cpu(input, f"{what} input")
        if not output.is_contiguous():
            raise InvalidArgumentError(f"dlcp: {what} output must be contiguous")
        if output.dtype != input.dtype or output.numel() != input.numel() * self._size:
            raise InvalidArgumentError(
                f"dlcp: {what} output must hold world size x the input ({self._size} x "
                f"{input.numel()} entries of {input.dtype})"
            )
        if input.numel() == 0:
            return Job()
        # Whole words per rank: dlcp gathers straight into the output's memory.
        if (input.numel() * input.element_size()) % 4 == 0:
            source = TensorBuffer.for_bytes(input, f"{what} input")
            target = TensorBuffer.for_bytes(output, f"{what} output")
            work = self._live(what).allgather(source.floats, target.floats, self._exact_options())
            return Job([work], lambda results: target.finish())
        flat = output.detach().view(-1)

        def use(parts):
            for rank, part in enumerate(parts):
                flat[rank * part.numel() : (rank + 1) * part.numel()].copy_(part.reshape(-1))

        return self._gather_job(input, what, use)

    # -- reduce-scatter ------------------------------------------------------------------------

    def _reduce_scatter_job(self, output, combined_input, op, what):
        """Reduce-scatter of `combined_input` (every rank's shards, flat: rank r's shard at
        [r * n, (r + 1) * n)) into `output` (n entries): dlcp's reduce-scatter for float
        SUM/AVG/PREMUL_SUM (each rank sends (W-1)/W of its input; gradient-sized ones may lose
        up to the budget), else exactly from the gathered inputs."""
        require_dense_cpu(output, f"{what} output")
        name = op_name(op)
        check_reducible(name, output.dtype, what)
        factor = premul_factor(op) if name == "PREMUL_SUM" else 1.0
        n = output.numel()
        if n == 0:
            return Job()
        if not on_float_path(name, output.dtype):
            target = output.detach()
            rank = self._rank

            def use(parts):
                target.copy_(reduce_parts(parts, name, factor)[rank * n : (rank + 1) * n]
                             .view(target.shape))

            return self._gather_job(combined_input, what, use)
        source = TensorBuffer.for_reduction(combined_input, f"{what} input")
        target = TensorBuffer.for_reduction(output, f"{what} output")
        settings = self._settings
        gradient_sized = combined_input.numel() >= settings.lossy_min_entries
        options = with_op(settings.gradient if gradient_sized else self._exact_options(), name)
        lossy = gradient_sized and options.loss_budget > 0
        work = self._live(what).reduce_scatter(source.floats, target.floats, options)

        def finish(results):
            if name == "PREMUL_SUM":
                target.floats *= factor
            target.finish()

        return Job([work], finish, 1 if lossy else 0)

    def reduce_scatter(self, output_tensors, input_lists, opts=None):
        output = only_tensor(output_tensors, "reduce_scatter output")
        if len(input_lists) != 1:
            raise InvalidArgumentError("dlcp: reduce_scatter needs one list of input tensors")
        self._check_per_rank(list(input_lists[0]), output, "reduce_scatter input")
        flat = torch.cat([t.detach().reshape(-1) for t in input_lists[0]])
        job = self._reduce_scatter_job(output, flat, reduce_op_of(opts), "reduce_scatter")
        return self._post(job, [output])

    def _reduce_scatter_tensor_job(self, output, input, opts, what):
        require_dense_cpu(output, f"{what} output")
        require_dense_cpu(input, f"{what} input")
        if input.dtype != output.dtype or input.numel() != output.numel() * self._size:
            raise InvalidArgumentError(
                f"dlcp: {what} input must hold world size x the output ({self._size} x "
                f"{output.numel()} entries of {output.dtype})"
            )
        flat = input.detach().reshape(-1)
        return self._reduce_scatter_job(output, flat, reduce_op_of(opts), what)

    def _reduce_scatter_base(self, output, input, opts=None):
        job = self._reduce_scatter_tensor_job(output, input, opts, "reduce_scatter_tensor")
        return self._post(job, [output])

    def reduce_scatter_single(self, output, input, opts=None):
        job = self._reduce_scatter_tensor_job(output, input, opts, "reduce_scatter_single")
        return self._post(job, [output])

    reduce_scatter_tensor = _reduce_scatter_base

    def reduce_scatter_tensor_coalesced(self, outputs, inputs, opts=None):
        jobs = [
            self._reduce_scatter_tensor_job(output, input, opts, "reduce_scatter_tensor_coalesced")
            for output, input in zip(outputs, inputs, strict=True)
        ]
        return self._post(combined(jobs), list(outputs))

    reduce_scatter_single_coalesced = reduce_scatter_tensor_coalesced

    # -- all-to-all ----------------------------------------------------------------------------

    def _alltoall_job(self, flat_input, flat_output, in_counts, out_counts, what):
        """All-to-all of flat `flat_input` into flat `flat_output`: this rank sends
        in_counts[r] entries to rank r (in rank order) and receives out_counts[r] from it.
        Exact: every rank's input (padded to the largest) is gathered and each rank takes its
        parts. The ranks first agree on the counts (blocking briefly)."""
        size = self._size
        mine = torch.tensor(in_counts, dtype=torch.int64)
        every = torch.zeros(size * size, dtype=torch.int64)
        self._live(what).allgather(
            mine.numpy().view("float32"), every.numpy().view("float32"), self._exact_options()
        ).wait()
        table = every.view(size, size).tolist()  # [sender][receiver]
        for sender in range(size):
            if table[sender][self._rank] != out_counts[sender]:
                raise InvalidArgumentError(
                    f"dlcp: {what}: rank {sender} sends {table[sender][self._rank]} entries to "
                    f"rank {self._rank}, which expects {out_counts[sender]}"
                )
        largest = max(sum(row) for row in table)
        if largest == 0:
            return Job()
        padded = torch.zeros(largest, dtype=flat_input.dtype)
        padded[: flat_input.numel()].copy_(flat_input)
        rank = self._rank

        def use(parts):
            at = 0
            for sender, row in enumerate(table):
                offset, length = sum(row[:rank]), row[rank]
                if length:
                    flat_output[at : at + length].copy_(parts[sender][offset : offset + length])
                at += length

        return self._gather_job(padded, what, use)

    def alltoall_base(self, output, input, output_split_sizes, input_split_sizes, opts=None):
        what = "all_to_all_single"
        require_dense_cpu(output, f"{what} output")
        require_dense_cpu(input, f"{what} input")
        if not output.is_contiguous():
            raise InvalidArgumentError(f"dlcp: {what} output must be contiguous")
        if input.dtype != output.dtype:
            raise InvalidArgumentError(f"dlcp: {what} input and output must have one dtype")
        in_counts = self._split_counts(input, input_split_sizes, "input", what)
        out_counts = self._split_counts(output, output_split_sizes, "output", what)
        job = self._alltoall_job(
            input.detach().reshape(-1).contiguous(), output.detach().view(-1), in_counts,
            out_counts, what,
        )
        return self._post(job, [output])

    all_to_all_single = alltoall_base

    def _split_counts(self, tensor, splits, which, what):
        """Entries per rank from split sizes in rows (first dimension); none = equal parts."""
        rows = 1 if tensor.dim() == 0 else tensor.shape[0]
        per_row = 1 if tensor.dim() == 0 or rows == 0 else tensor.numel() // rows
        splits = list(splits or [])
        if not splits:
            if rows % self._size:
                raise InvalidArgumentError(
                    f"dlcp: {what} {which} has {rows} rows, not divisible by the group's "
                    f"{self._size}"
                )
            return [rows // self._size * per_row] * self._size
        if len(splits) != self._size:
            raise InvalidArgumentError(
                f"dlcp: {what} {which} split sizes need {self._size} entries, got {len(splits)}"
            )
        if sum(splits) != rows:
            raise InvalidArgumentError(
                f"dlcp: {what} {which} split sizes do not add up to its {rows} rows"
            )
        return [int(split) * per_row for split in splits]

    def alltoall(self, output_tensors, input_tensors, opts=None):
        what = "all_to_all"
        if len(input_tensors) != self._size or len(output_tensors) != self._size:
            raise InvalidArgumentError(
                f"dlcp: {what} needs {self._size} input and {self._size} output tensors"
            )
        dtype = input_tensors[0].dtype
        for tensor in list(input_tensors) + list(output_tensors):
            require_dense_cpu(tensor, f"{what} tensor")
            if tensor.dtype != dtype:
                raise InvalidArgumentError(f"dlcp: {what} tensors must have one dtype")
        out_counts = [t.numel() for t in output_tensors]
        received = torch.empty(sum(out_counts), dtype=dtype)
        job = self._alltoall_job(
            torch.cat([t.detach().reshape(-1) for t in input_tensors]), received,
            [t.numel() for t in input_tensors], out_counts, what,
        )
        inner = job.finish
        outputs = list(output_tensors)

        def finish(results):
            if inner is not None:
                inner(results)
            at = 0
            for target, length in zip(outputs, out_counts):
                if length:
                    target.detach().copy_(received[at : at + length].view(target.shape))
                at += length

        return self._post(Job(job.works, finish, job.lossy), outputs)
