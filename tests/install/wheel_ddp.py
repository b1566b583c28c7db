"""A user's 2-rank DDP job on a pip-installed dlcp (wheel_test.sh runs it under torchrun).

    torchrun --standalone --nproc_per_node 2 wheel_ddp.py --backend dlcp
    torchrun --standalone --nproc_per_node 2 wheel_ddp.py --backend gloo --hook

init_process_group(backend) after `import dlcp.torch` (which registers the "dlcp" backend), a
tiny model in DistributedDataParallel (with --hook, dlcp's communication hook on it), 3 SGD steps
on random data that differs between the ranks, then the parameters must have moved and be
bit-equal on both ranks (all-gathered over gloo). --package-dir: dlcp must be loaded from there.
"""

import argparse
import gc
import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

import dlcp
import dlcp.torch

STEPS = 3


def fail(rank, message):
    print(f"wheel_ddp rank {rank}: {message}", file=sys.stderr, flush=True)
    sys.exit(1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["dlcp", "gloo"], required=True)
    parser.add_argument("--hook", action="store_true", help="register dlcp.torch.comm_hook")
    parser.add_argument("--package-dir", help="where dlcp must be loaded from")
    args = parser.parse_args()
    rank = int(os.environ["RANK"])

    loaded_from = os.path.realpath(os.path.dirname(dlcp.__file__))
    if args.package_dir and loaded_from != os.path.realpath(args.package_dir):
        fail(rank, f"dlcp loaded from {loaded_from}, expected {args.package_dir}")

    dist.init_process_group(args.backend)
    if dist.get_backend() != args.backend:
        fail(rank, f"the default group's backend is {dist.get_backend()}, not {args.backend}")
    world = dist.get_world_size()
    if world != 2 or dist.get_rank() != rank:
        fail(rank, f"rank {dist.get_rank()} of {world}, expected rank {rank} of 2")
    # All the checks' own communication goes over gloo, whatever the group under test.
    check_group = None if args.backend == "gloo" else dist.new_group(backend="gloo")

    # Different initial weights on each rank: DDP must start every rank from rank 0's.
    torch.manual_seed(1000 + rank)
    model = torch.nn.Sequential(
        torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4)
    )
    ddp = DistributedDataParallel(model)
    if args.hook:
        state = dlcp.torch.HookState(model)
        ddp.register_comm_hook(state, dlcp.torch.comm_hook)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.1)
    initial = torch.cat([p.detach().reshape(-1).clone() for p in model.parameters()])

    for _ in range(STEPS):
        inputs, targets = torch.randn(8, 16), torch.randn(8, 4)
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(ddp(inputs), targets)
        loss.backward()
        optimizer.step()
    if args.hook and state.buckets < STEPS:
        fail(rank, f"the dlcp hook sent {state.buckets} buckets in {STEPS} steps")
    if not torch.isfinite(loss):
        fail(rank, f"loss {loss.item()}")

    final = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    if not torch.isfinite(final).all():
        fail(rank, "parameters are not finite")
    if torch.equal(final, initial):
        fail(rank, f"parameters did not change in {STEPS} steps")
    gathered = [torch.empty_like(final) for _ in range(world)]
    dist.all_gather(gathered, final, group=check_group)
    if not torch.equal(gathered[0], gathered[1]):
        difference = (gathered[0] - gathered[1]).abs().max().item()
        fail(rank, f"parameters differ between the ranks after {STEPS} steps (max {difference})")

    dist.barrier(group=check_group)
    # The model goes before its group (docs/pytorch.md, Teardown).
    summary = f"loss {loss.item():.4f}"
    del ddp, optimizer, loss
    gc.collect()
    dist.destroy_process_group()
    variant = args.backend + (" + dlcp hook" if args.hook else "")
    print(f"wheel_ddp rank {rank}: {variant}: {STEPS} steps, {summary}, "
          f"parameters equal on {world} ranks; dlcp {dlcp.__version__} from {loaded_from}",
          flush=True)


if __name__ == "__main__":
    main()
