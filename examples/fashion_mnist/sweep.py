"""Runs train.py through torchrun for a set of configurations and summarises the records.

    /usr/bin/python3 examples/fashion_mnist/sweep.py --epochs 3 --output-dir /tmp/fmnist
    /usr/bin/python3 examples/fashion_mnist/sweep.py --epochs 3 --output-dir /tmp/fmnist-seeds \\
        --seeds 1,2 --budgets 0.1 --drop-rates 0.1 --sweep-modes hook,backend

First the three transports without loss (gloo, the dlcp hook, the dlcp backend), then a sweep of
loss budgets x injected loss rates for the dlcp modes in --sweep-modes (a budget changes nothing
without loss, so loss-free runs with a budget are skipped), then --extra runs; every
configuration once per seed. Each run leaves <name>.json (train.py's record) and <name>.log;
summary.json lists every run (time per epoch, accuracy per epoch, delivered fraction, divergence,
the hook's Python time per bucket) and, per configuration, the mean final accuracy over the seeds
and its change from the loss-free run of the same mode, in percentage points.
"""

import argparse
import json
import os
import subprocess

from dlcp.torch import metrics

HERE = os.path.dirname(os.path.abspath(__file__))


def parse_list(text, kind=float):
    return [kind(item) for item in text.split(",") if item]


def parse_extra(text):
    """'hook:0.3:0.3,backend:0.1:0.1' -> [(mode, budget, drop rate)]."""
    runs = []
    for item in text.split(","):
        if item:
            mode, budget, drop = item.split(":")
            runs.append((mode, float(budget), float(drop)))
    return runs


def config_name(mode, budget, drop):
    return mode if mode == "gloo" else f"{mode}_budget{budget:g}_drop{drop:g}"


def configurations(args):
    runs = [("gloo", 0.0, 0.0), ("hook", 0.0, 0.0), ("backend", 0.0, 0.0)]
    for mode in args.sweep_modes:
        for drop in args.drop_rates:
            for budget in args.budgets:
                if drop > 0 and (mode, budget, drop) not in runs:
                    runs.append((mode, budget, drop))
    runs += [run for run in args.extra if run not in runs]
    return runs


def launch(args, mode, budget, drop, seed, name):
    command = [
        args.torchrun, "--standalone", f"--nproc_per_node={args.nproc}", "--redirects", "1",
        "--tee", "1", os.path.join(HERE, "train.py"), "--mode", mode, "--epochs", str(args.epochs),
        "--seed", str(seed), "--output", os.path.join(args.output_dir, f"{name}.json"),
    ]
    if mode != "gloo":
        command += ["--loss-budget", str(budget), "--drop-rate", str(drop)]
    if args.limit_train:
        command += ["--limit-train", str(args.limit_train)]
    command += args.train_args
    with open(os.path.join(args.output_dir, f"{name}.log"), "w") as log:
        return subprocess.run(command, stdout=log, stderr=subprocess.STDOUT).returncode


def summarize_run(record):
    last = record["epochs"][-1]
    statistics = [e["dlcp"] for e in record["epochs"] if e["dlcp"]]
    return {
        "mean_epoch_seconds": record["mean_epoch_seconds"],
        "epoch_seconds": [e["train_seconds"] for e in record["epochs"]],
        "accuracy_per_epoch": [e["test_accuracy"] for e in record["epochs"]],
        "final_accuracy": record["final_accuracy"],
        "time_to_target_seconds": record["time_to_target_seconds"],
        "min_epoch_delivered_fraction": min(
            (s["delivered_fraction"] for s in statistics), default=1.0
        ),
        "max_divergence": max(e["divergence"]["max_abs"] for e in record["epochs"]),
        "python_seconds_per_bucket": last["dlcp"].get("python_seconds_per_bucket"),
        "transfer_seconds_per_bucket": last["dlcp"].get("transfer_seconds_per_bucket"),
        "python_share_of_transfer": last["dlcp"].get("python_share_of_transfer"),
    }


def summarize_configs(runs):
    """Mean final accuracy per configuration over its seeds, and the change from the loss-free
    configuration of the same mode."""
    by_config = {}
    for run in runs:
        by_config.setdefault(run["config"], []).append(run)
    summary = {}
    for config, members in by_config.items():
        accuracies = [m["final_accuracy"] for m in members]
        summary[config] = {
            "seeds": [m["seed"] for m in members],
            "mean_final_accuracy": metrics.mean(accuracies),
            "min_final_accuracy": min(accuracies),
            "max_final_accuracy": max(accuracies),
            "mean_epoch_seconds": metrics.mean(m["mean_epoch_seconds"] for m in members),
            "min_delivered_fraction": min(m["min_epoch_delivered_fraction"] for m in members),
        }
    for config, entry in summary.items():
        mode = config.split("_")[0]
        reference = summary.get(config_name(mode, 0.0, 0.0))
        if reference is not None:
            entry["accuracy_change_pp"] = metrics.percentage_points(
                entry["mean_final_accuracy"], reference["mean_final_accuracy"]
            )
    return summary


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--output-dir", default="fashion_mnist_results")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--nproc", type=int, default=4)
    parser.add_argument("--seeds", type=lambda t: parse_list(t, int), default=[0])
    parser.add_argument("--budgets", type=parse_list, default=[0.0, 0.01, 0.05, 0.10])
    parser.add_argument("--drop-rates", type=parse_list, default=[0.01, 0.05, 0.10])
    parser.add_argument("--sweep-modes", type=lambda t: parse_list(t, str), default=["hook"])
    parser.add_argument("--extra", type=parse_extra, default=[],
                        help="more runs as mode:budget:drop,... (e.g. hook:0.3:0.3)")
    parser.add_argument("--limit-train", type=int, default=0)
    parser.add_argument("--torchrun", default="/usr/bin/torchrun")
    parser.add_argument("--skip-existing", action="store_true",
                        help="reuse <name>.json records from an earlier sweep")
    parser.add_argument("train_args", nargs="*", help="extra train.py arguments (after --)")
    args = parser.parse_args()
    os.makedirs(args.output_dir, exist_ok=True)

    runs = []
    for seed in args.seeds:
        for mode, budget, drop in configurations(args):
            config = config_name(mode, budget, drop)
            name = config if args.seeds == [0] else f"{config}_seed{seed}"
            path = os.path.join(args.output_dir, f"{name}.json")
            if not (args.skip_existing and os.path.exists(path)):
                print(f"running {name}", flush=True)
                if launch(args, mode, budget, drop, seed, name) != 0:
                    print(f"  {name} failed; see {name}.log", flush=True)
                    continue
            with open(path) as file:
                record = json.load(file)
            run = {"name": name, "config": config, "mode": mode, "loss_budget": budget,
                   "drop_rate": drop, "seed": seed, **summarize_run(record)}
            runs.append(run)
            print(f"{name:36s} {run['mean_epoch_seconds']:6.2f} s/epoch  "
                  f"accuracy {run['final_accuracy']:.4f}  "
                  f"delivered {run['min_epoch_delivered_fraction']:.4f}  "
                  f"divergence {run['max_divergence']:.2g}", flush=True)

    configs = summarize_configs(runs)
    for config, entry in configs.items():
        change = entry.get("accuracy_change_pp")
        print(f"{config:28s} mean accuracy {entry['mean_final_accuracy']:.4f} over seeds "
              f"{entry['seeds']}" + ("" if change is None else f", {change:+.2f} pp"))
    with open(os.path.join(args.output_dir, "summary.json"), "w") as file:
        json.dump({"epochs": args.epochs, "nproc": args.nproc, "runs": runs, "configs": configs},
                  file, indent=1)


if __name__ == "__main__":
    main()
