"""DDP step time of several torch.distributed backends side by side, in one job, steps
interleaved so that every backend sees the same machine load. Run one process per rank:

    torchrun --standalone --nproc_per_node 2 --redirects 1 --tee 1 \\
        examples/ddp_step_time.py --backends dlcp,gloo --steps 30 --repeat 3

Each backend gets its own process group and its own DDP copy of one model (an MLP of about
--parameters floats in layers of --width); a step is forward, backward (DDP's all-reduces
overlap it) and an SGD step. Rank 0 prints one JSON line: the median step time of each backend
over all repetitions, the ratios to the first backend, and the per-repetition medians.
"""

import argparse
import json
import statistics
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import dlcp.torch  # noqa: F401  (registers the "dlcp" backend)


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backends", default="dlcp,gloo",
                        help="comma-separated: dlcp, gloo, or any registered backend")
    parser.add_argument("--steps", type=int, default=30, help="timed steps per repetition")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--parameters", type=float, default=8e6, help="model size in floats")
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--bucket-mib", type=float, default=25.0, help="DDP's bucket_cap_mb")
    return parser.parse_args()


def make_model(parameters, width):
    layers = max(1, int(parameters // (width * width)))
    blocks = []
    for _ in range(layers):
        blocks += [torch.nn.Linear(width, width), torch.nn.ReLU()]
    return torch.nn.Sequential(*blocks)


def main():
    args = parse_args()
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    names = args.backends.split(",")
    torch.manual_seed(0)
    base = make_model(args.parameters, args.width)
    runs = {}
    for name in names:
        group = dist.new_group(backend=name)
        model = make_model(args.parameters, args.width)
        model.load_state_dict(base.state_dict())
        ddp = DDP(model, process_group=group, bucket_cap_mb=args.bucket_mib)
        runs[name] = (ddp, torch.optim.SGD(ddp.parameters(), lr=1e-3), [])
    generator = torch.Generator().manual_seed(rank)
    batch = torch.randn(args.batch_size, args.width, generator=generator)

    def step(name):
        ddp, optimizer, _ = runs[name]
        optimizer.zero_grad()
        ddp(batch).square().mean().backward()
        optimizer.step()

    for _ in range(args.warmup):
        for name in names:
            step(name)
    medians = {name: [] for name in names}
    for _ in range(args.repeat):
        times = {name: [] for name in names}
        for _ in range(args.steps):
            for name in names:  # interleaved: every backend sees the same load
                dist.barrier()
                start = time.perf_counter()
                step(name)
                times[name].append(time.perf_counter() - start)
        for name in names:
            medians[name].append(statistics.median(times[name]))
    summary = {name: statistics.median(values) * 1e3 for name, values in medians.items()}
    if rank == 0:
        first = names[0]
        print(json.dumps({
            "world_size": dist.get_world_size(),
            "torch": torch.__version__,
            "parameters": sum(p.numel() for p in base.parameters()),
            "step_ms_p50": summary,
            "ratio_to_" + first: {name: summary[name] / summary[first] for name in names},
            "repetition_medians_ms": {n: [v * 1e3 for v in medians[n]] for n in names},
        }))
    for ddp, optimizer, _ in runs.values():
        del ddp, optimizer
    runs.clear()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
