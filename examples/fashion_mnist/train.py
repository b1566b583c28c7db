"""Data-parallel training of a small CNN on Fashion-MNIST, with gradients carried by gloo, by the
dlcp communication hook (over a gloo group) or by the dlcp backend, replicated (DDP) or sharded
(ZeRO-3 style, or FSDP2's fully_shard on torch >= 2.7). Run one process per rank:

    torchrun --standalone --nproc_per_node 4 --redirects 1 --tee 1 \\
        examples/fashion_mnist/train.py --mode hook --loss-budget 0.05 --drop-rate 0.02 \\
        --epochs 5 --output hook.json

Rank 0 prints one line per epoch and writes the whole record as JSON: time per epoch, test
accuracy per epoch, delivered fraction of gradient contributions, replica divergence and the
hook's Python time per bucket. --transport-host (or DLCP_BIND_HOST) sets the address dlcp binds
to, for runs inside network namespaces; gloo follows GLOO_SOCKET_IFNAME as usual.
"""

import argparse
import gc
import json
import os
import sys
import time
import weakref

import torch
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import data  # noqa: E402
from model import SmallCnn  # noqa: E402
from sharded import ShardedSgd  # noqa: E402

import dlcp.torch  # noqa: E402
from dlcp.torch import metrics  # noqa: E402


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mode",
                        choices=("gloo", "gloo-fp16", "hook", "backend", "gloo-sharded", "sharded",
                                 "gloo-fsdp2", "fsdp2"),
                        default="hook",
                        help="sharded: ZeRO-3 style over the dlcp backend (gradients' "
                        "reduce-scatter with the loss budget); gloo-sharded: the same over gloo; "
                        "fsdp2 / gloo-fsdp2: torch's fully_shard over the dlcp backend / gloo; "
                        "gloo-fp16: gloo with DDP's fp16_compress_hook")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=64, help="per rank")
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--momentum", type=float, default=0.9)
    parser.add_argument("--loss-budget", type=float, default=0.0,
                        help="share of gradient contributions that may be lost (dlcp modes)")
    parser.add_argument("--aggregation", choices=("unbiased", "zero_fill"), default="unbiased")
    parser.add_argument("--wire", choices=("fp32", "bf16", "fp16"), default="fp32",
                        help="how dlcp sends the gradients (hook, backend and sharded modes)")
    parser.add_argument("--error-feedback", action="store_true",
                        help="carry the 16-bit rounding error into the next step (hook mode)")
    parser.add_argument("--hadamard", action="store_true",
                        help="rotate the gradients before the lossy all-reduce (dlcp modes)")
    parser.add_argument("--drop-rate", type=float, default=0.0,
                        help="injected receive-path packet loss in dlcp (loopback experiments)")
    parser.add_argument("--burst", type=float, default=1.0, help="mean length of loss bursts")
    parser.add_argument("--protected-share", type=float, default=None,
                        help="share of each tensor's packets protected by magnitude (default 0.5)")
    parser.add_argument("--mtu", type=int, default=1500,
                        help="dlcp packet size (0 = the path's MTU, 64 KiB on loopback)")
    parser.add_argument("--transport-host", default=os.environ.get("DLCP_BIND_HOST", ""),
                        help="address dlcp binds to (default: DLCP_BIND_HOST, else automatic)")
    parser.add_argument("--spine-addresses", default="",
                        help="comma-separated local addresses, one per switch path: dlcp binds a "
                             "data socket to each and sprays over them (testbed runs)")
    parser.add_argument("--no-local-path", dest="local_path", action="store_false",
                        help="dlcp: ranks of one host exchange over UDP, as between hosts, instead "
                             "of shared memory (loss-free, so the budget never cuts anything)")
    parser.add_argument("--topology", default="auto", choices=["auto", "flat", "hierarchical"],
                        help="dlcp: collectives by host (reduce within it first) or flat; auto "
                             "goes by host where a host holds several ranks of a multi-host job")
    parser.add_argument("--bucket-cap-mb", type=float, default=0.25)
    parser.add_argument("--threads", type=int, default=1, help="torch threads per rank")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--limit-train", type=int, default=0, help="train on the first N images")
    parser.add_argument("--target-accuracy", type=float, default=0.85)
    parser.add_argument("--data-dir", default=data.DEFAULT_DIRECTORY)
    parser.add_argument("--output", default="", help="JSON record (written by rank 0)")
    args = parser.parse_args(argv)
    if not 0.0 <= args.loss_budget <= 1.0:
        parser.error(f"--loss-budget must be within [0, 1], got {args.loss_budget}")
    if args.mode.startswith("gloo") and (args.loss_budget or args.drop_rate):
        parser.error("--loss-budget and --drop-rate apply to the dlcp modes only")
    if args.mode.startswith("gloo") and (args.wire != "fp32" or args.hadamard):
        parser.error("--wire and --hadamard apply to the dlcp modes only (gloo-fp16 is gloo's)")
    if args.error_feedback and (args.mode != "hook" or args.wire == "fp32"):
        parser.error("--error-feedback needs --mode hook and a 16-bit --wire")
    if args.mode.endswith("fsdp2") and fully_shard is None:
        parser.error(f"--mode {args.mode} needs torch >= 2.7 (fully_shard on CPU); this is "
                     f"torch {torch.__version__}")
    return args


def fully_shard_on_cpu():
    """torch's FSDP2 entry point where it runs on CPU (torch >= 2.7), else None."""
    major, minor = (int(part) for part in torch.__version__.split(".")[:2])
    if (major, minor) < (2, 7):
        return None
    from torch.distributed.fsdp import fully_shard

    return fully_shard


fully_shard = fully_shard_on_cpu()


def dlcp_options(args, rank):
    """Transport settings shared by the hook and the backend."""
    options = dict(mtu=args.mtu, drop_rate=args.drop_rate, mean_burst_length=args.burst,
                   drop_seed=1000 * args.seed + rank + 1, local_path=args.local_path,
                   topology=args.topology)
    if args.protected_share is not None:
        options["protected_share"] = args.protected_share
    if args.transport_host:
        options["bind_host"] = args.transport_host
    if args.spine_addresses:
        addresses = [a for a in args.spine_addresses.split(",") if a]
        # Two data sockets per path, as the transport's own benchmarks use them.
        options.update(local_addresses=addresses, paths=2 * len(addresses))
    return options


def set_up(args, model, rank):
    """The process group and the DDP model for the chosen mode; returns (ddp, statistics)."""
    if args.mode in ("sharded", "gloo-sharded"):
        if args.mode == "sharded":
            options = dlcp.torch.Options(loss_budget=args.loss_budget, aggregation=args.aggregation,
                                         wire=args.wire, hadamard_rotation=args.hadamard,
                                         **dlcp_options(args, rank))
            dist.init_process_group("dlcp", pg_options=options)
            group = dist.distributed_c10d._get_default_group()
            return model, group.reset_totals, lambda: dlcp.torch.statistics(group)
        dist.init_process_group("gloo")
        return model, lambda: None, lambda: {}
    if args.mode in ("fsdp2", "gloo-fsdp2"):
        if args.mode == "fsdp2":
            options = dlcp.torch.Options(loss_budget=args.loss_budget, aggregation=args.aggregation,
                                         wire=args.wire, **dlcp_options(args, rank))
            dist.init_process_group("dlcp", pg_options=options)
            group = dist.distributed_c10d._get_default_group()
            reset, read = group.reset_totals, lambda: dlcp.torch.statistics(group)
        else:
            dist.init_process_group("gloo")
            reset, read = (lambda: None), (lambda: {})
        # Each layer's parameters sharded on its own, then the rest: parameters are all-gathered
        # (loss-free) before each layer runs, gradients reduce-scattered (under the budget).
        for layer in model.modules():
            if layer is not model and any(True for _ in layer.parameters(recurse=False)):
                fully_shard(layer)
        fully_shard(model)
        return model, reset, read
    if args.mode == "backend":
        options = dlcp.torch.Options(loss_budget=args.loss_budget, aggregation=args.aggregation,
                                     wire=args.wire, hadamard_rotation=args.hadamard,
                                     **dlcp_options(args, rank))
        dist.init_process_group("dlcp", pg_options=options)
        group = dist.distributed_c10d._get_default_group()
        ddp = DDP(model, bucket_cap_mb=args.bucket_cap_mb)
        return ddp, group.reset_totals, lambda: dlcp.torch.statistics(group)
    dist.init_process_group("gloo")
    ddp = DDP(model, bucket_cap_mb=args.bucket_cap_mb)
    if args.mode == "gloo":
        return ddp, lambda: None, lambda: {}
    if args.mode == "gloo-fp16":
        # The 16-bit TCP baseline every DDP user has: gradients / world, cast to fp16, summed.
        ddp.register_comm_hook(None, default_hooks.fp16_compress_hook)
        return ddp, lambda: None, lambda: {}
    state = dlcp.torch.HookState(
        model, loss_budget=args.loss_budget, wire=args.wire, error_feedback=args.error_feedback,
        hadamard_rotation=args.hadamard,
        options=dlcp.torch.Options(aggregation=args.aggregation, **dlcp_options(args, rank)))
    ddp.register_comm_hook(state, dlcp.torch.comm_hook)
    return ddp, state.reset_statistics, state.statistics


def evaluate(model, images, labels, rank, world_size, every_batch=False):
    """Test accuracy over the whole test set, each rank scoring its share (or, for FSDP2, whose
    forward pass is collective, every rank running every batch and scoring its share)."""
    model.eval()
    correct = 0
    with torch.no_grad():
        if every_batch:
            for start in range(0, len(images), 1000):
                scores = model(images[start : start + 1000])
                if (start // 1000) % world_size == rank:
                    correct += (scores.argmax(1) == labels[start : start + 1000]).sum().item()
        for start in range(rank * 1000, len(images), world_size * 1000) if not every_batch else ():
            batch = slice(start, start + 1000)
            correct += (model(images[batch]).argmax(1) == labels[batch]).sum().item()
    model.train()
    counts = torch.tensor([float(correct)])
    dist.all_reduce(counts)
    return metrics.accuracy(counts.item(), len(images))


def divergence(model, world_size):
    """Largest parameter difference between the replicas (rank 0 computes it); FSDP2 keeps one
    copy of each parameter, so there is nothing to compare."""
    if is_fully_sharded(model):
        return {"max_abs": 0.0, "sharded": True}
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    gathered = [torch.empty_like(flat) for _ in range(world_size)]
    dist.all_gather(gathered, flat)
    return metrics.replica_divergence(gathered)


def is_fully_sharded(model):
    return fully_shard is not None and any(
        type(p).__name__ == "DTensor" for p in model.parameters())


def main(argv=None):
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    model = SmallCnn()
    ddp, reset_statistics, read_statistics = set_up(args, model, int(os.environ.get("RANK", 0)))
    rank, world_size = dist.get_rank(), dist.get_world_size()
    train_images, train_labels = data.load("train", args.data_dir)
    if args.limit_train:
        train_images = train_images[: args.limit_train]
        train_labels = train_labels[: args.limit_train]
    test_images, test_labels = data.load("t10k", args.data_dir)
    sharded = args.mode in ("sharded", "gloo-sharded")
    if sharded:
        optimizer = ShardedSgd(model, args.lr, args.momentum,
                               reduce_scatter_supported=args.mode == "sharded")
    else:
        optimizer = torch.optim.SGD(ddp.parameters(), lr=args.lr, momentum=args.momentum)

    record = {"config": {**vars(args), "world_size": world_size}, "epochs": []}
    elapsed = 0.0
    loss = None
    for epoch in range(1, args.epochs + 1):
        indices = data.shard_indices(len(train_images), rank, world_size, epoch, args.seed)
        reset_statistics()
        dist.barrier()
        start = time.perf_counter()
        loss_sum, steps = 0.0, 0
        phases = {"forward_seconds": 0.0, "backward_seconds": 0.0, "optimizer_seconds": 0.0}
        for first in range(0, len(indices) - args.batch_size + 1, args.batch_size):
            batch = indices[first : first + args.batch_size]
            optimizer.zero_grad()
            if sharded:
                optimizer.gather_parameters()
            t0 = time.perf_counter()
            loss = torch.nn.functional.cross_entropy(ddp(train_images[batch]), train_labels[batch])
            t1 = time.perf_counter()
            loss.backward()  # includes waiting for the gradient transfers
            t2 = time.perf_counter()
            optimizer.step()
            phases["forward_seconds"] += t1 - t0
            phases["backward_seconds"] += t2 - t1
            phases["optimizer_seconds"] += time.perf_counter() - t2
            loss_sum += loss.item()
            steps += 1
        if sharded:
            optimizer.gather_parameters()  # the trained shards, for evaluation
        dist.barrier()
        seconds = time.perf_counter() - start
        elapsed += seconds
        statistics = read_statistics()
        entry = {
            "epoch": epoch,
            "train_seconds": seconds,
            "elapsed_seconds": elapsed,
            "steps": steps,
            **phases,
            "train_loss": metrics.per_item(loss_sum, steps),
            "test_accuracy": evaluate(model, test_images, test_labels, rank, world_size,
                                      every_batch=args.mode.endswith("fsdp2")),
            "divergence": divergence(model, world_size),
            "dlcp": statistics,
        }
        record["epochs"].append(entry)
        if rank == 0:
            delivered = statistics.get("delivered_fraction", 1.0)
            print(f"epoch {epoch}: {seconds:.2f} s, loss {entry['train_loss']:.4f}, "
                  f"test accuracy {entry['test_accuracy']:.4f}, delivered {delivered:.4f}, "
                  f"divergence {entry['divergence']['max_abs']:.3g}", flush=True)

    history = [(e["elapsed_seconds"], e["test_accuracy"]) for e in record["epochs"]]
    record["final_accuracy"] = history[-1][1]
    record["mean_epoch_seconds"] = metrics.per_item(elapsed, args.epochs)
    record["time_to_target_seconds"] = metrics.time_to_accuracy(history, args.target_accuracy)
    if rank == 0 and args.output:
        with open(args.output, "w") as file:
            json.dump(record, file, indent=1)
    dist.barrier()
    # torch 1.13 joins a gloo group's threads holding the GIL when DDP's reducer drops the last
    # reference to the group, and a gloo thread still freeing a tensor waits for the GIL: a hang
    # in a few exits in a hundred. So the model goes first, while destroy_process_group (which lets go
    # of the GIL) still holds the group. (The last loss reaches the reducer through its graph.)
    if isinstance(ddp, DDP) or args.mode.endswith("fsdp2"):
        released = weakref.ref(ddp)
        del ddp, model, optimizer, loss, reset_statistics, read_statistics
        gc.collect()
        if released() is not None:
            raise RuntimeError("the model outlived training: the group's teardown may hang")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
