"""Fashion-MNIST training across the emulated switch testbed: time-to-accuracy of gloo, the dlcp
backend and the dlcp hook over the same congested, lossy fabric (needs root).

    /usr/bin/python3 examples/fashion_mnist/testbed.py --epochs 3 --output-dir /tmp/fm-testbed

It brings the testbed up (`dlcp testbed up`: 4 host namespaces, 2 spines, a gray failure on
spine 1, background TCP and UDP floods; with --long-link-rtt-ms, two sites of 2 hosts joined by
a long link that loses 1% of its frames in bursts instead of the gray failure), then for each seed runs every mode in turn, so that the
modes see the same load. Each host is a torchrun node inside its namespace, rendezvousing with
host 0 through the fabric, as a multi-host job would, with --nproc-per-node ranks (default 1;
several share their host's namespace, so dlcp's collectives reduce within the host first). gloo's TCP connections
get per-flow ECMP over both spines; dlcp binds one data socket per spine address and sprays.
The testbed is torn down at the end, also after an error or Ctrl-C.

summary.json holds every run (sweep.py's per-run figures) and, per mode, the median time per
epoch, the median time to --target-accuracy and the speed-up of each dlcp mode over gloo on both.
"""

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time

from dlcp.torch import metrics

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from sweep import summarize_run  # noqa: E402

REPO = os.path.dirname(os.path.dirname(HERE))
GLOO_INTERFACE = "host"  # the testbed's host-address interface: TCP leaves through the ECMP routes


def host_address(host):
    return f"10.0.0.{host + 1}"


def spine_addresses(host, spines):
    return ",".join(f"10.{spine + 1}.0.{host + 1}" for spine in range(spines))


def run_checked(command):
    print("+ " + " ".join(command), flush=True)
    subprocess.run(command, check=True)


def testbed_up(args):
    """Brings the testbed up; returns the process that holds a two-site one (None otherwise)."""
    command = [args.dlcp, "testbed", "up", "--prefix", args.prefix, "--hosts", str(args.hosts),
               "--rate-mbit", str(args.rate_mbit)]
    if args.background:
        command.append("--background")
    if args.long_link_rtt_ms is None:
        run_checked(command + ["--gray-spine", "1", "--gray-loss", str(args.gray_loss)])
        return None
    # Two sites: the long link is what loses packets; its forwarder runs in `testbed up`, which
    # holds the network until it is terminated.
    command += ["--gray-spine", "-1", "--sites", "2",
                "--one-way-ms", str(args.long_link_rtt_ms / 2),
                "--random-loss", str(args.long_link_random_loss),
                "--burst-loss", str(args.long_link_burst_loss),
                "--burst-length", str(args.long_link_burst_length)]
    print("+ " + " ".join(command), flush=True)
    holder = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    for line in holder.stdout:
        print(line, end="", flush=True)
        if line.startswith("testbed up:"):
            return holder
    raise SystemExit(f"`dlcp testbed up --sites 2` ended with status {holder.wait()} before the "
                     "testbed was up")


def testbed_down(args, holder):
    if holder is not None:
        holder.terminate()  # tears the two sites down
        holder.wait(timeout=60)
    subprocess.run([args.dlcp, "testbed", "down", "--prefix", args.prefix], check=False)


def mode_flags(mode):
    """train.py's flags for a mode, which may name a wire dtype and extras after colons:
    'hook:bf16' is --mode hook --wire bf16, 'hook:bf16:ef' adds --error-feedback, ':hadamard'
    adds --hadamard, ':flat' --topology flat (collectives not by host)."""
    base, *extras = mode.split(":")
    flags = ["--mode", base]
    for extra in extras:
        if extra in ("fp32", "bf16", "fp16"):
            flags += ["--wire", extra]
        elif extra == "ef":
            flags.append("--error-feedback")
        elif extra == "hadamard":
            flags.append("--hadamard")
        elif extra == "flat" and not base.startswith("gloo"):
            flags += ["--topology", "flat"]
        else:
            raise SystemExit(f"mode {mode!r}: unknown part {extra!r} (fp32, bf16, fp16, ef, "
                             "hadamard, flat for dlcp)")
    return flags


def launch(args, mode, seed, name, port):
    """One torchrun node per host namespace; returns the exit codes."""
    nodes = []
    for host in range(args.hosts):
        command = [
            "ip", "netns", "exec", f"{args.prefix}-h{host}", args.torchrun,
            f"--nnodes={args.hosts}", f"--nproc_per_node={args.nproc_per_node}",
            f"--node_rank={host}",
            f"--master_addr={host_address(0)}", f"--master_port={port}",
            "--redirects", "1", "--tee", "1",
            os.path.join(HERE, "train.py"), *mode_flags(mode), "--epochs", str(args.epochs),
            "--seed", str(seed), "--target-accuracy", str(args.target_accuracy),
            "--output", os.path.join(args.output_dir, f"{name}.json"),
        ]
        if args.limit_train:
            command += ["--limit-train", str(args.limit_train)]
        if not mode.startswith("gloo"):
            command += ["--loss-budget", str(args.loss_budget), "--mtu", str(args.mtu),
                        "--transport-host", host_address(host),
                        "--spine-addresses", spine_addresses(host, 2)]
        environment = dict(os.environ, GLOO_SOCKET_IFNAME=GLOO_INTERFACE, OMP_NUM_THREADS="1")
        log = open(os.path.join(args.output_dir, f"{name}.h{host}.log"), "w")
        nodes.append((subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                       env=environment, start_new_session=True), log))
    deadline = time.monotonic() + args.timeout
    codes = []
    for process, log in nodes:
        try:
            codes.append(process.wait(timeout=max(1.0, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            codes.append(process.wait())
        log.close()
    return codes


def summarize_modes(runs, modes):
    """Per mode: median epoch time and time to target over the seeds; each dlcp mode's speed-up
    over gloo on both."""
    summary = {}
    for mode in modes:
        members = [run for run in runs if run["mode"] == mode]
        if not members:
            continue
        reached = [m["time_to_target_seconds"] for m in members
                   if m["time_to_target_seconds"] is not None]
        summary[mode] = {
            "runs": len(members),
            "median_epoch_seconds": statistics.median(m["mean_epoch_seconds"] for m in members),
            "median_time_to_target_seconds": (
                statistics.median(reached) if len(reached) == len(members) else None),
            "mean_final_accuracy": metrics.mean(m["final_accuracy"] for m in members),
            "min_delivered_fraction": min(m["min_epoch_delivered_fraction"] for m in members),
        }
    for mode, entry in summary.items():
        # The sharded mode is compared with sharded training over gloo, the others with DDP.
        gloo = summary.get("gloo-sharded" if mode.startswith("sharded") else "gloo")
        if mode.startswith("gloo") or gloo is None:
            continue
        entry["speedup_epoch_vs_gloo"] = metrics.speedup(gloo["median_epoch_seconds"],
                                                         entry["median_epoch_seconds"])
        entry["speedup_time_to_target_vs_gloo"] = metrics.speedup(
            gloo["median_time_to_target_seconds"], entry["median_time_to_target_seconds"])
    return summary


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--output-dir", default="fashion_mnist_testbed")
    parser.add_argument("--modes", default="gloo,backend,hook",
                        help="of train.py's: gloo, backend, hook, gloo-sharded, sharded, gloo-fsdp2, fsdp2 "
                             "(the fsdp2 modes need torch >= 2.7: --torchrun from a venv with it)")
    parser.add_argument("--seeds", default="0")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--limit-train", type=int, default=16000)
    parser.add_argument("--target-accuracy", type=float, default=0.80)
    parser.add_argument("--loss-budget", type=float, default=0.05, help="for the dlcp modes")
    parser.add_argument("--hosts", type=int, default=4)
    parser.add_argument("--nproc-per-node", type=int, default=1,
                        help="ranks per host (torchrun's --nproc_per_node)")
    parser.add_argument("--rate-mbit", type=float, default=400)
    parser.add_argument("--mtu", type=int, default=9000, help="the testbed's MTU")
    parser.add_argument("--gray-loss", type=float, default=0.01)
    parser.add_argument("--long-link-rtt-ms", type=float,
                        help="two sites of hosts/2 hosts joined by a long link of this round "
                             "trip, which loses packets instead of a gray spine")
    parser.add_argument("--long-link-random-loss", type=float, default=0.0)
    parser.add_argument("--long-link-burst-loss", type=float, default=0.01,
                        help="the long link's long-run loss in bursts")
    parser.add_argument("--long-link-burst-length", type=float, default=4,
                        help="the long link's mean loss burst, in frames")
    parser.add_argument("--no-background", dest="background", action="store_false")
    parser.add_argument("--prefix", default="dlcpfm")
    parser.add_argument("--dlcp", default=os.path.join(REPO, "build", "tools", "dlcp"))
    parser.add_argument("--torchrun", default="/usr/bin/torchrun")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per run")
    parser.add_argument("--skip-existing", action="store_true",
                        help="reuse <mode>_seed<N>.json records from an earlier run (and recompute "
                             "the time to --target-accuracy from them)")
    args = parser.parse_args()
    if args.nproc_per_node < 1:
        parser.error("--nproc-per-node must be at least 1")
    modes = [m for m in args.modes.split(",") if m]
    seeds = [int(s) for s in args.seeds.split(",") if s]
    os.makedirs(args.output_dir, exist_ok=True)

    runs = []
    record_path = lambda name: os.path.join(args.output_dir, f"{name}.json")  # noqa: E731
    names = [(f"{mode}_seed{seed}", mode, seed) for seed in seeds for mode in modes]
    to_run = [n for n in names if not (args.skip_existing and os.path.exists(record_path(n[0])))]
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # tear down on kill as on Ctrl-C
    if to_run and os.geteuid() != 0:
        parser.error("the testbed needs root (network namespaces, tc, nftables)")
    holder = testbed_up(args) if to_run else None
    try:
        port = 29600
        for name, mode, seed in names:
            if (name, mode, seed) in to_run:
                print(f"running {name}", flush=True)
                port += 1  # a fresh rendezvous port: the last run's may linger in TIME_WAIT
                codes = launch(args, mode, seed, name, port)
                if any(codes):
                    print(f"  {name} failed (exit codes {codes}); see {name}.h*.log", flush=True)
                    continue
            with open(record_path(name)) as file:
                record = json.load(file)
            history = [(e["elapsed_seconds"], e["test_accuracy"]) for e in record["epochs"]]
            record["time_to_target_seconds"] = metrics.time_to_accuracy(history,
                                                                        args.target_accuracy)
            run = {"name": name, "mode": mode, "seed": seed, **summarize_run(record)}
            runs.append(run)
            print(f"  {name}: {run['mean_epoch_seconds']:6.2f} s/epoch, accuracy per epoch "
                  f"{[round(a, 4) for a in run['accuracy_per_epoch']]}, time to "
                  f"{args.target_accuracy:g}: {run['time_to_target_seconds']}, delivered "
                  f"{run['min_epoch_delivered_fraction']:.4f}", flush=True)
    finally:
        if to_run:
            testbed_down(args, holder)

    summary = summarize_modes(runs, modes)
    for mode, entry in summary.items():
        line = (f"{mode:8s} median {entry['median_epoch_seconds']:.2f} s/epoch, time to target "
                f"{entry['median_time_to_target_seconds']}, accuracy "
                f"{entry['mean_final_accuracy']:.4f}")
        if "speedup_epoch_vs_gloo" in entry:
            to_target = entry["speedup_time_to_target_vs_gloo"]
            line += (f", vs gloo: {entry['speedup_epoch_vs_gloo']:.2f}x per epoch, "
                     + ("target not reached by all" if to_target is None
                        else f"{to_target:.2f}x to target"))
        print(line)
    config = {k: v for k, v in vars(args).items() if k not in ("dlcp", "torchrun")}
    with open(os.path.join(args.output_dir, "summary.json"), "w") as file:
        json.dump({"config": config, "runs": runs, "modes": summary}, file, indent=1)
    return 0 if len(runs) == len(modes) * len(seeds) else 1


if __name__ == "__main__":
    sys.exit(main())
