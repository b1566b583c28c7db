"""Reductions the dlcp backend computes itself.

dlcp's all-reduce moves float32 sums (and may lose a budget of them). Every other op and dtype
torch reduces is done exactly instead: every rank's tensor is gathered byte for byte and reduced
here, in rank order, in the tensor's own dtype, so integers never pass through float32 and
MIN/MAX/bitwise results are exact.
"""

import torch
import torch.distributed as dist

from .. import _core
from ..errors import InvalidArgumentError
from .tensors import FLOAT_PATH_DTYPES


def op_name(op):
    """'SUM', 'AVG', ... for a ReduceOp or a ReduceOp.RedOpType, on torch 1.13 and 2.x."""
    kind = getattr(op, "op", op)  # a ReduceOp instance holds its RedOpType in .op
    name = getattr(kind, "name", None)
    if name is None:
        for candidate in ("SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR"):
            if op == getattr(dist.ReduceOp, candidate):
                return candidate
        return "PREMUL_SUM"
    return name


def premul_factor(op):
    """The factor of a PREMUL_SUM op (torch >= 2.1 exposes it), else raise."""
    factor = getattr(op, "factor", None)
    if factor is None:
        raise InvalidArgumentError(
            "dlcp: ReduceOp.PREMUL_SUM needs torch >= 2.1, whose ReduceOp exposes its factor"
        )
    if isinstance(factor, torch.Tensor):
        if factor.numel() != 1:
            raise InvalidArgumentError("dlcp: ReduceOp.PREMUL_SUM takes a scalar factor")
        factor = factor.item()
    return float(factor)


def on_float_path(name, dtype):
    """Whether dlcp's float all-reduce carries op `name` on `dtype`: the only reductions a loss
    budget may apply to."""
    return name in ("SUM", "AVG", "PREMUL_SUM") and dtype in FLOAT_PATH_DTYPES


def check_reducible(name, dtype, what):
    """Raises InvalidArgumentError unless op `name` can reduce `dtype`."""
    integral = not dtype.is_floating_point and not dtype.is_complex
    if name in ("SUM", "PRODUCT"):
        if dtype == torch.bool:
            raise InvalidArgumentError(
                f"dlcp: {what} cannot use ReduceOp.{name} on a bool tensor (use MIN, MAX or a "
                "bitwise op)"
            )
    elif name in ("AVG", "PREMUL_SUM"):
        if integral:
            raise InvalidArgumentError(
                f"dlcp: {what} cannot use ReduceOp.{name} on an integer tensor ({dtype}): sum, "
                "then divide"
            )
    elif name in ("MIN", "MAX"):
        if dtype.is_complex:
            raise InvalidArgumentError(f"dlcp: {what} cannot use ReduceOp.{name} on a complex tensor")
    elif name in ("BAND", "BOR", "BXOR"):
        if not integral:
            raise InvalidArgumentError(
                f"dlcp: {what} cannot use ReduceOp.{name} with non-integral dtype {dtype}"
            )
    else:
        raise InvalidArgumentError(f"dlcp: {what} does not support ReduceOp.{name}")


def reduce_parts(parts, name, factor=1.0):
    """The reduction of `parts` (rank r's tensor at r, one dtype and shape), in rank order."""
    result = parts[0].clone()
    for part in parts[1:]:
        if name in ("SUM", "AVG", "PREMUL_SUM"):
            result.add_(part)
        elif name == "PRODUCT":
            result.mul_(part)
        elif name == "MIN":
            result = torch.minimum(result, part)
        elif name == "MAX":
            result = torch.maximum(result, part)
        elif name == "BAND":
            result.bitwise_and_(part)
        elif name == "BOR":
            result.bitwise_or_(part)
        elif name == "BXOR":
            result.bitwise_xor_(part)
    if name == "AVG":
        result.div_(len(parts))
    elif name == "PREMUL_SUM":
        result.mul_(factor)
    return result


def reduce_op_of(opts):
    """The ReduceOp of torch's options object (or a bare op); SUM when there is none."""
    if opts is None:
        return dist.ReduceOp.SUM
    if isinstance(opts, (dist.ReduceOp, dist.ReduceOp.RedOpType)):
        return opts
    return opts.reduceOp


_COLLECTIVE_FIELDS = ("layer", "num_layers", "loss_budget", "broadcast_loss_budget",
                      "aggregation", "deadline_ms", "wire", "hadamard_rotation")


def with_op(options, name):
    """A copy of CollectiveOptions `options` with dlcp's op for torch's op `name` (dlcp sums;
    AVG divides by the contributions that arrived; PREMUL_SUM's factor is applied after)."""
    copy = _core.CollectiveOptions()
    for field in _COLLECTIVE_FIELDS:
        setattr(copy, field, getattr(options, field))
    copy.op = _core.ReduceOp.average if name == "AVG" else _core.ReduceOp.sum
    return copy
