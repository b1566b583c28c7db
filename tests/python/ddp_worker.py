"""One rank of the DDP tests (test_ddp.py starts it with RANK, WORLD_SIZE, MASTER_ADDR,
MASTER_PORT). Trains the same small model over several process groups and saves, per rank,
the parameters each run ended with and what the collectives reported.

    ddp_worker.py <default backend: gloo|dlcp> <output directory>
"""

import json
import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import dlcp
import dlcp.torch

STEPS = 12
# Loopback paths carry 64 KiB datagrams; a 1500-byte MTU cuts each bucket into many packets so
# that injected loss hits part of a message, not all of it.
LOSSY = dict(mtu=1500, protected_share=0.0, drop_rate=0.05)


def make_model():
    torch.manual_seed(1234)
    return torch.nn.Sequential(
        torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 128), torch.nn.ReLU(),
        torch.nn.Linear(128, 8),
    )


def train(ddp, rank):
    """STEPS of SGD on a learnable task (labels from a fixed random teacher), so that the ranks'
    gradients share a signal as in real training; returns the flat parameters."""
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    teacher = torch.randn(64, 8, generator=torch.Generator().manual_seed(99))
    generator = torch.Generator().manual_seed(100 + rank)
    for _ in range(STEPS):
        inputs = torch.randn(32, 64, generator=generator)
        targets = (inputs @ teacher).argmax(1)
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(ddp(inputs), targets).backward()
        optimizer.step()
    return flat_parameters(ddp.module)


def train_with_hook(rank, **state_options):
    """Trains a fresh model through DDP (default group) with the dlcp hook; returns the model,
    the hook state and the flat parameters train() ends with."""
    model = make_model()
    ddp = DDP(model)
    state = dlcp.torch.HookState(model, **state_options)
    ddp.register_comm_hook(state, dlcp.torch.comm_hook)
    return model, state, train(ddp, rank)


def flat_parameters(model):
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


def check_collectives(group, rank, world):
    """Results of the plain collectives on `group`; the test compares them with the truth."""
    checks = {}
    summed = torch.full((3000,), float(rank + 1))
    dist.all_reduce(summed, group=group)
    checks["sum"] = summed[0].item()
    averaged = torch.full((10,), float(rank + 1))
    dist.all_reduce(averaged, op=dist.ReduceOp.AVG, group=group)
    checks["average"] = averaged[0].item()
    counts = torch.arange(5, dtype=torch.int64) * (rank + 1)
    dist.all_reduce(counts, group=group)
    checks["int_sum"] = counts.tolist()
    # Bit patterns a float view would mangle if anything did arithmetic (a NaN among them).
    patterns = torch.tensor([-1, 2**62 + 12345, -(2**40) - 7, 0x7FF0000000000001],
                            dtype=torch.int64)
    received = patterns.clone() if rank == 0 else torch.zeros(4, dtype=torch.int64)
    dist.broadcast(received, 0, group=group)
    checks["broadcast_exact"] = torch.equal(received, patterns)
    outputs = [torch.zeros(3, dtype=torch.float16) for _ in range(world)]
    dist.all_gather(outputs, torch.full((3,), rank + 0.5, dtype=torch.float16), group=group)
    checks["gathered"] = [t[0].item() for t in outputs]
    work = dist.all_reduce(torch.ones(2000), group=group, async_op=True)
    checks["future"] = work.get_future().wait()[0][0].item()
    dist.barrier(group=group)
    largest = torch.full((3,), float(rank))
    dist.all_reduce(largest, op=dist.ReduceOp.MAX, group=group)
    checks["max"] = largest[0].item()
    try:
        dist.all_reduce(torch.ones(3), op=dist.ReduceOp.BAND, group=group)
        checks["bitwise_float_error"] = ""
    except RuntimeError as error:
        checks["bitwise_float_error"] = str(error)
    return checks


def main():
    default_backend, output = sys.argv[1], sys.argv[2]
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.set_num_threads(1)
    dist.init_process_group(default_backend)
    default = dist.distributed_c10d._get_default_group()
    gloo = default if default_backend == "gloo" else dist.new_group(backend="gloo")
    reliable = default if default_backend == "dlcp" else dist.new_group(backend="dlcp")
    lossy = dist.new_group(
        backend="dlcp",
        pg_options=dlcp.torch.Options(loss_budget=0.1, drop_seed=rank + 1, **LOSSY),
    )
    report = {"collectives": check_collectives(reliable, rank, world)}
    parameters = {"initial": flat_parameters(make_model())}
    parameters["gloo"] = train(DDP(make_model(), process_group=gloo), rank)
    parameters["dlcp"] = train(DDP(make_model(), process_group=reliable), rank)
    reliable_totals = dlcp.torch.statistics(reliable)

    parameters["dlcp_lossy"] = train(DDP(make_model(), process_group=lossy), rank)
    report["lossy"] = dlcp.torch.statistics(lossy)

    # Half the bytes: bf16 through the backend, fp16 with error feedback through the hook.
    bf16 = dist.new_group(backend="dlcp", pg_options=dlcp.torch.Options(wire="bf16"))
    parameters["dlcp_bf16"] = train(DDP(make_model(), process_group=bf16), rank)
    report["bf16_transport"] = dlcp.torch.statistics(bf16)["transport"]
    report["fp32_transport"] = reliable_totals["transport"]
    _, state, parameters["hook_fp16"] = train_with_hook(
        rank, wire="fp16", error_feedback=True
    )
    state.close()

    _, state, parameters["hook_lossy"] = train_with_hook(
        rank, loss_budget=0.1, options=dlcp.torch.Options(drop_seed=rank + 11, **LOSSY)
    )
    report["hook"] = state.statistics()

    # A lossy broadcast side lets replicas drift; the state re-syncs them every 4 steps.
    model, state, parameters["drifting"] = train_with_hook(
        rank, loss_budget=0.1, broadcast_loss_budget=0.05, resync_every=4,
        options=dlcp.torch.Options(drop_seed=rank + 21, **LOSSY),
    )
    state.resync()
    parameters["resynced"] = flat_parameters(model)
    report["drifting"] = state.statistics()
    report["reliable"] = reliable_totals

    torch.save(parameters, os.path.join(output, f"parameters{rank}.pt"))
    with open(os.path.join(output, f"report{rank}.json"), "w") as file:
        json.dump(report, file)
    dist.barrier(group=gloo)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
