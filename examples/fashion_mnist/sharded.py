"""Sharded data-parallel training (ZeRO stage 3, written out): each rank keeps one shard of the
flat parameters and of the optimizer state. Per step the full parameters are all-gathered
(loss-free), the gradients are reduce-scattered (over dlcp: with the loss budget, as the
reference system treats FSDP's gradients) and each rank updates only its shard.

gloo in torch 1.13 has no reduce-scatter: its baseline all-reduces the gradients and keeps its
shard, the way a user of gloo must."""

import torch
import torch.distributed as dist


class ShardedSgd:
    """SGD with momentum over the rank's shard of a model's flat parameters."""

    def __init__(self, model, lr, momentum, reduce_scatter_supported):
        self.model = model
        self.lr, self.momentum = lr, momentum
        self.rank, self.world = dist.get_rank(), dist.get_world_size()
        self.parameters = list(model.parameters())
        total = sum(p.numel() for p in self.parameters)
        self.shard_size = -(-total // self.world)  # padded so every rank's shard is equal
        self.padded = self.shard_size * self.world
        flat = self.flatten([p.detach() for p in self.parameters])
        # Every rank starts from rank 0's parameters.
        dist.broadcast(flat, 0)
        self.shard = flat[self.rank * self.shard_size:(self.rank + 1) * self.shard_size].clone()
        self.velocity = torch.zeros_like(self.shard)
        self.reduce_scatter_supported = reduce_scatter_supported
        self.unflatten(flat)

    def flatten(self, tensors):
        flat = torch.zeros(self.padded)
        offset = 0
        for tensor in tensors:
            flat[offset:offset + tensor.numel()] = tensor.reshape(-1)
            offset += tensor.numel()
        return flat

    def unflatten(self, flat):
        offset = 0
        with torch.no_grad():
            for p in self.parameters:
                p.copy_(flat[offset:offset + p.numel()].view_as(p))
                offset += p.numel()

    def gather_parameters(self):
        """The full parameters from every rank's shard (loss-free)."""
        if self.reduce_scatter_supported:
            flat = torch.empty(self.padded)
            dist.all_gather_into_tensor(flat, self.shard)
        else:  # gloo in torch 1.13 gathers into a list only
            parts = [torch.empty_like(self.shard) for _ in range(self.world)]
            dist.all_gather(parts, self.shard)
            flat = torch.cat(parts)
        self.unflatten(flat)

    def step(self):
        """Averages the gradients into this rank's shard and updates it."""
        grads = self.flatten([p.grad for p in self.parameters])
        if self.reduce_scatter_supported:
            shard_grad = torch.empty(self.shard_size)
            dist.reduce_scatter_tensor(shard_grad, grads, op=dist.ReduceOp.SUM)
        else:
            dist.all_reduce(grads)
            shard_grad = grads[self.rank * self.shard_size:(self.rank + 1) * self.shard_size]
        shard_grad /= self.world
        self.velocity.mul_(self.momentum).add_(shard_grad)
        self.shard.add_(self.velocity, alpha=-self.lr)

    def zero_grad(self):
        for p in self.parameters:
            p.grad = None
