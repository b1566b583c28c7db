"""Teardown never hangs: short torchrun jobs of examples/fashion_mnist/train.py, each of which
must exit within a bound after its training ends (a hung rank would hold torchrun, whose exit
barrier then times out after minutes).

DLCP_TEARDOWN_RUNS (default 4) sets how many runs, alternating the hook and the backend; 50
is the hunt that found the hang this test guards against (docs/pytorch.md, "Teardown").
"""

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest

import dlcp.torch

HERE = os.path.dirname(os.path.abspath(__file__))
TRAIN = os.path.join(HERE, "..", "..", "examples", "fashion_mnist", "train.py")
DATA = "/usr/share/datasets/fashion-mnist"
TORCHRUN = shutil.which("torchrun") or "/usr/bin/torchrun"
RUN_SECONDS = 120  # a run takes about 10 s; a hung exit waits far longer than this


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


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

    def test_short_runs_all_exit(self):
        runs = int(os.environ.get("DLCP_TEARDOWN_RUNS", "4"))
        modes = ("hook", "backend") if dlcp.torch.BACKEND_AVAILABLE else ("hook",)
        seconds = []
        for run in range(runs):
            mode = modes[run % len(modes)]
            with tempfile.TemporaryDirectory() as output, self.subTest(run=run, mode=mode):
                seconds.append(self.run_job(mode, output))
        print(f"{runs} runs, slowest {max(seconds):.1f} s, median "
              f"{sorted(seconds)[len(seconds) // 2]:.1f} s", file=sys.stderr)


if __name__ == "__main__":
    unittest.main()
