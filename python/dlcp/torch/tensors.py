"""Torch tensors as the float32 buffers dlcp._core moves, with no libtorch ABI in between.

dlcp moves float32 buffers. A contiguous float32 tensor travels in place (numpy shares its
memory); another float dtype on the all-reduce path is converted to a float32 copy and written
back; any other tensor travels as its raw bytes, padded to whole 4-byte words, so integers and
bit patterns arrive unchanged.
"""

import numpy as np
import torch

from ..errors import InvalidArgumentError

FLOAT_PATH_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
_REAL_OF_COMPLEX = {torch.complex64: torch.float32, torch.complex128: torch.float64}


def require_dense_cpu(tensor, what):
    """Raises InvalidArgumentError unless `tensor` is a strided CPU tensor."""
    if not isinstance(tensor, torch.Tensor):
        raise InvalidArgumentError(f"dlcp: {what} must be a torch.Tensor, got {type(tensor).__name__}")
    if tensor.device.type != "cpu":
        raise InvalidArgumentError(
            f"dlcp: {what} is on {tensor.device}; the dlcp backend moves CPU tensors only "
            "(it has no device staging: copy to the CPU first, or use gloo or nccl for "
            f"{tensor.device.type} tensors)"
        )
    if tensor.layout != torch.strided:
        raise InvalidArgumentError(
            f"dlcp: {what} is a sparse or otherwise non-strided tensor, which dlcp does not support"
        )


def only_tensor(tensors, what):
    """The one tensor of a per-rank list (the backend drives one CPU device per process)."""
    if len(tensors) != 1:
        raise InvalidArgumentError(
            f"dlcp: {what} takes one tensor per rank, got {len(tensors)} (the dlcp backend "
            "drives one CPU device per process)"
        )
    require_dense_cpu(tensors[0], what)
    return tensors[0]


def padded_words(tensor):
    """4-byte words that hold the tensor's bytes."""
    return (tensor.numel() * tensor.element_size() + 3) // 4


def _in_place_floats(tensor):
    """A float32 numpy view of the tensor's memory, or None when it cannot be one."""
    if not tensor.is_contiguous() or tensor.data_ptr() % 4:
        return None
    nbytes = tensor.numel() * tensor.element_size()
    if nbytes % 4:
        return None
    if nbytes == 0:
        return np.zeros(0, dtype=np.float32)
    if tensor.dtype == torch.float32:
        return tensor.detach().view(-1).numpy()
    if tensor.dtype in (torch.bool, torch.complex64, torch.complex128):
        return None  # view(uint8) refuses some of these; the staged path handles them
    return tensor.detach().view(-1).view(torch.uint8).numpy().view(np.float32)


def bytes_of(tensor):
    """A contiguous uint8 tensor of `tensor`'s bytes (a copy where it must be)."""
    flat = tensor.detach().contiguous().view(-1)
    if flat.dtype == torch.uint8:
        return flat
    if flat.dtype == torch.bool:
        return flat.to(torch.uint8)
    if flat.is_complex():
        flat = torch.view_as_real(flat).reshape(-1)
    return flat.view(torch.uint8)


def restore_bytes(raw, like):
    """A tensor of `like`'s dtype and shape from its raw bytes `raw` (uint8, at least enough)."""
    nbytes = like.numel() * like.element_size()
    raw = raw[:nbytes]
    if like.dtype == torch.bool:
        return raw.to(torch.bool).view(like.shape)
    if like.is_complex():
        real = _REAL_OF_COMPLEX[like.dtype]
        return torch.view_as_complex(raw.view(real).view(-1, 2)).view(like.shape)
    return raw.view(like.dtype).view(like.shape)


class TensorBuffer:
    """A tensor as a float32 buffer for one collective. `floats` is what dlcp moves; `finish()`
    (after the collective) writes the result back into the tensor where it was staged."""

    def __init__(self, target, floats, staging, kind):
        self.target = target
        self.floats = floats
        self._staging = staging
        self._kind = kind

    @classmethod
    def for_reduction(cls, tensor, what):
        """A float tensor for dlcp's float all-reduce: in place when float32 and contiguous,
        else converted to float32 and back."""
        require_dense_cpu(tensor, what)
        target = tensor.detach()
        if target.dtype == torch.float32:
            floats = _in_place_floats(target)
            if floats is not None:
                return cls(target, floats, None, "in place")
        staging = target.to(torch.float32, copy=True).contiguous().view(-1)
        return cls(target, staging.numpy(), staging, "converted")

    @classmethod
    def for_bytes(cls, tensor, what):
        """Any tensor as its raw bytes, padded to whole words."""
        require_dense_cpu(tensor, what)
        target = tensor.detach()
        floats = _in_place_floats(target)
        if floats is not None:
            return cls(target, floats, None, "in place")
        staging = torch.zeros(padded_words(target) * 4, dtype=torch.uint8)
        if target.numel():
            raw = bytes_of(target)
            staging[: raw.numel()].copy_(raw)
        return cls(target, staging.numpy().view(np.float32), staging, "bytes")

    def finish(self):
        if self._kind == "converted":
            self.target.copy_(self._staging.view(self.target.shape))
        elif self._kind == "bytes" and self.target.numel():
            self.target.copy_(restore_bytes(self._staging, self.target))


def word_tensor(words):
    """A zeroed float32 tensor of `words` entries and its numpy view (dlcp's buffer)."""
    tensor = torch.zeros(words, dtype=torch.float32)
    return tensor, tensor.numpy()


def pack_bytes(source, words):
    """`source`'s bytes in a float32 tensor of `words` words (zero padded)."""
    tensor = torch.zeros(words, dtype=torch.float32)
    if source.numel():
        raw = bytes_of(source)
        tensor.view(torch.uint8)[: raw.numel()].copy_(raw)
    return tensor


def unpack_bytes(words, like):
    """A new tensor of `like`'s dtype and shape from the float32 word tensor `words`."""
    if like.numel() == 0:
        return torch.empty_like(like, memory_format=torch.contiguous_format)
    return restore_bytes(words.view(torch.uint8), like).clone()
