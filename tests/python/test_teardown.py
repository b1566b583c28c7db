"""Teardown never hangs: short torchrun jobs of examples/fashion_mnist/train.py, each of which
must exit within a bound after its training ends (a hung rank would hold torchrun, whose exit
barrier then times out after minutes).

The hang these runs once met (docs/pytorch.md, "Teardown") came from torch 1.13 destroying a
gloo group from DDP's reducer while holding the GIL; it shows in a few exits in a hundred, so
the runs alone would rarely catch it. test_models_go_before_the_group checks its cause on every
run: no DDP model may be alive when train.py destroys its process group.

DLCP_TEARDOWN_RUNS (default 2) sets how many runs, alternating the hook and the backend;
DLCP_TEARDOWN_MODES=hook runs the hook only (the mode that hung):

    DLCP_TEARDOWN_RUNS=50 DLCP_TEARDOWN_MODES=hook python3 -m unittest \
        test_teardown.TeardownTest.test_short_runs_all_exit
"""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest

import dlcp.torch  # noqa: F401  (registers the "dlcp" backend)

HERE = os.path.dirname(os.path.abspath(__file__))
TRAIN = os.path.join(HERE, "..", "..", "examples", "fashion_mnist", "train.py")
DATA = "/usr/share/datasets/fashion-mnist"
TORCHRUN = shutil.which("torchrun") or "/usr/bin/torchrun"
RUN_SECONDS = 120  # a run takes about 10 s; a hung exit waits far longer than this


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def train_record(test, ranks, mode, *extra):
    """A short torchrun job of train.py (2 epochs of 3000 images, seed 3) on `ranks` ranks;
    returns its JSON record, failing `test` with the job's output if it fails."""
    with tempfile.TemporaryDirectory() as output:
        record_path = os.path.join(output, "record.json")
        command = [
            sys.executable, TORCHRUN, "--nnodes", "1", "--nproc_per_node", str(ranks),
            "--rdzv_backend", "c10d", "--rdzv_endpoint", f"127.0.0.1:{free_port()}",
            "--redirects", "1", "--tee", "1", TRAIN, "--mode", mode, "--epochs", "2",
            "--limit-train", "3000", "--seed", "3", "--output", record_path, *extra,
        ]
        done = subprocess.run(command, capture_output=True, text=True, timeout=150)
        test.assertEqual(done.returncode, 0, done.stdout[-3000:] + done.stderr[-3000:])
        with open(record_path) as file:
            return json.load(file)


# Runs train.py in this process with destroy_process_group wrapped to count the DDP models
# still alive when it is called; argv[1] is the report, the rest train.py's arguments.
COUNT_MODELS_AT_TEARDOWN = f"""
import gc, json, sys
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
sys.path.insert(0, {os.path.dirname(TRAIN)!r})
import train
report, counts, destroy = sys.argv[1], {{"destroyed": 0, "ddp_models_alive": 0}}, dist.destroy_process_group
def counting_destroy(*args, **kwargs):
    gc.collect()
    counts["destroyed"] += 1
    counts["ddp_models_alive"] += sum(isinstance(o, DistributedDataParallel) for o in gc.get_objects())
    return destroy(*args, **kwargs)
dist.destroy_process_group = counting_destroy
train.main(sys.argv[2:])
json.dump(counts, open(report, "w"))
"""


@unittest.skipUnless(os.path.isdir(DATA) and os.path.exists(TORCHRUN),
                     "needs dataset-fashion-mnist and torchrun (scripts/install-deps.sh)")
class TeardownTest(unittest.TestCase):
    def run_job(self, mode, output):
        command = [
            sys.executable, TORCHRUN, "--nnodes", "1", "--nproc_per_node", "2",
            "--rdzv_backend", "c10d", "--rdzv_endpoint", f"127.0.0.1:{free_port()}",
            "--redirects", "1", "--tee", "1", TRAIN, "--mode", mode, "--epochs", "1",
            "--limit-train", "1024", "--loss-budget", "0.05", "--drop-rate", "0.02",
            "--output", os.path.join(output, "record.json"),
        ]
        start = time.monotonic()
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   text=True, start_new_session=True)
        try:
            text, _ = process.communicate(timeout=RUN_SECONDS)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)
            text, _ = process.communicate()
            self.fail(f"{mode} run did not exit within {RUN_SECONDS} s:\n{text[-3000:]}")
        self.assertEqual(process.returncode, 0, text[-3000:])
        self.assertTrue(os.path.exists(os.path.join(output, "record.json")), text[-3000:])
        return time.monotonic() - start

    def test_models_go_before_the_group(self):
        for mode in ("gloo", "hook"):
            with tempfile.TemporaryDirectory() as output, self.subTest(mode=mode):
                report = os.path.join(output, "alive.json")
                environment = dict(os.environ, RANK="0", LOCAL_RANK="0", WORLD_SIZE="1",
                                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()))
                result = subprocess.run(
                    [sys.executable, "-c", COUNT_MODELS_AT_TEARDOWN, report, "--mode", mode,
                     "--epochs", "1", "--limit-train", "256"],
                    env=environment, capture_output=True, text=True, timeout=RUN_SECONDS)
                self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
                with open(report) as file:
                    self.assertEqual(json.load(file), {"destroyed": 1, "ddp_models_alive": 0})

    def test_short_runs_all_exit(self):
        runs = int(os.environ.get("DLCP_TEARDOWN_RUNS", "2"))
        modes = ("hook", "backend")
        modes = tuple(os.environ.get("DLCP_TEARDOWN_MODES", ",".join(modes)).split(","))
        seconds = []
        for run in range(runs):
            mode = modes[run % len(modes)]
            with tempfile.TemporaryDirectory() as output, self.subTest(run=run, mode=mode):
                seconds.append(self.run_job(mode, output))
        print(f"{runs} runs, slowest {max(seconds):.1f} s, median "
              f"{sorted(seconds)[len(seconds) // 2]:.1f} s", file=sys.stderr)


if __name__ == "__main__":
    unittest.main()
