"""Fashion-MNIST from the Debian package dataset-fashion-mnist (gzip'd IDX files)."""

import gzip
import os

import numpy as np
import torch

DEFAULT_DIRECTORY = "/usr/share/datasets/fashion-mnist"
# Mean and standard deviation of the training images' pixels (0..1).
PIXEL_MEAN, PIXEL_STD = 0.2860, 0.3530


def read_idx(path):
    """An IDX file (big-endian dims after a magic word whose last byte is the rank) as numpy."""
    with gzip.open(path, "rb") as file:
        data = file.read()
    if data[:2] != b"\x00\x00" or data[2] != 0x08:
        raise ValueError(f"{path} is not an unsigned-byte IDX file")
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load(split, directory=DEFAULT_DIRECTORY):
    """(images [N, 1, 28, 28] float32 normalised, labels [N] int64) for 'train' or 't10k'."""
    images_path = os.path.join(directory, f"{split}-images-idx3-ubyte.gz")
    labels_path = os.path.join(directory, f"{split}-labels-idx1-ubyte.gz")
    for path in (images_path, labels_path):
        if not os.path.exists(path):
            raise FileNotFoundError(f"{path} is missing: apt-get install dataset-fashion-mnist")
    images = torch.from_numpy(read_idx(images_path).astype(np.float32) / 255.0)
    images = ((images - PIXEL_MEAN) / PIXEL_STD).unsqueeze(1)
    labels = torch.from_numpy(read_idx(labels_path).astype(np.int64))
    return images, labels


def shard_indices(count, rank, world_size, epoch, seed):
    """This rank's sample indices for an epoch: one shuffle shared by every rank, dealt out round
    robin and cut to the same length on every rank (every rank runs the same number of steps)."""
    generator = torch.Generator().manual_seed(seed + epoch)
    order = torch.randperm(count, generator=generator)
    per_rank = count // world_size
    return order[rank::world_size][:per_rank]
