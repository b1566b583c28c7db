"""DDP over the dlcp backend and with the dlcp hook, against gloo, with 2 and 4 processes."""

import json
import os
import socket
import subprocess
import sys
import tempfile
import unittest

import torch

HERE = os.path.dirname(os.path.abspath(__file__))


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def run_ranks(world_size, default_backend, output, worker="ddp_worker.py"):
    """Starts the ranks of a worker script (ddp_worker.py <default backend> <output>, or another
    worker's <output>) and waits; fails with their output on error."""
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()),
               WORLD_SIZE=str(world_size), OMP_NUM_THREADS="1")
    ranks = [
        subprocess.Popen(
            [sys.executable, os.path.join(HERE, worker)]
            + ([default_backend] if default_backend else []) + [output],
            env=dict(env, RANK=str(rank)), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True,
        )
        for rank in range(world_size)
    ]
    failures = []
    for rank, process in enumerate(ranks):
        try:
            text, _ = process.communicate(timeout=150)
        except subprocess.TimeoutExpired:
            process.kill()
            text, _ = process.communicate()
        if process.returncode != 0:
            failures.append(f"rank {rank} exited with {process.returncode}:\n{text[-3000:]}")
    if failures:
        raise AssertionError("\n".join(failures))


def launch(world_size, default_backend, output, worker="ddp_worker.py"):
    """run_ranks, then every rank's trained parameters and report."""
    run_ranks(world_size, default_backend, output, worker)
    results = []
    for rank in range(world_size):
        with open(os.path.join(output, f"report{rank}.json")) as report:
            results.append((torch.load(os.path.join(output, f"parameters{rank}.pt")),
                            json.load(report)))
    return results


class DdpTest(unittest.TestCase):
    def check_world(self, world_size, default_backend):
        with tempfile.TemporaryDirectory() as output:
            ranks = launch(world_size, default_backend, output)
        for rank, (parameters, report) in enumerate(ranks):
            with self.subTest(rank=rank, check="budget 0 matches gloo"):
                torch.testing.assert_close(parameters["dlcp"], parameters["gloo"],
                                           rtol=1e-5, atol=1e-6)
                if world_size == 2:  # a + b in any order: the sums, and so the steps, are gloo's
                    self.assertTrue(torch.equal(parameters["dlcp"], parameters["gloo"]))
                self.assertEqual(report["reliable"]["delivered_fraction"], 1.0)
            with self.subTest(rank=rank, check="collectives"):
                checks = report["collectives"]
                self.assertEqual(checks["sum"], world_size * (world_size + 1) / 2)
                self.assertEqual(checks["average"], (world_size + 1) / 2)
                self.assertEqual(checks["int_sum"],
                                 [k * world_size * (world_size + 1) // 2 for k in range(5)])
                self.assertTrue(checks["broadcast_exact"])
                self.assertEqual(checks["gathered"], [r + 0.5 for r in range(world_size)])
                self.assertEqual(checks["future"], world_size)
                self.assertEqual(checks["max"], world_size - 1)
                self.assertIn("ReduceOp.BAND with non-integral dtype", checks["bitwise_float_error"])
            with self.subTest(rank=rank, check="hook reports its Python time"):
                self.assertGreater(report["hook"]["buckets"], 0)
                self.assertGreater(report["hook"]["python_seconds_per_bucket"], 0)
        for run in ("lossy", "hook"):
            with self.subTest(check=f"{run} reports loss within its budget"):
                reports = [report[run] for _, report in ranks]
                expected = sum(r["contributions_expected"] for r in reports)
                received = sum(r["contributions_received"] for r in reports)
                self.assertTrue(all(r["lossy_collectives"] > 0 for r in reports))
                self.assertLess(received, expected)
                self.assertTrue(all(r["delivered_fraction"] >= 0.85 for r in reports), reports)
        reference = ranks[0][0]
        for rank, (parameters, _) in enumerate(ranks[1:], start=1):
            for run in ("dlcp_lossy", "hook_lossy"):
                with self.subTest(rank=rank, check=f"{run} replicas identical"):
                    self.assertTrue(torch.equal(parameters[run], reference[run]))
        with self.subTest(check="a lossy broadcast side is reported and re-synced"):
            reports = [report["drifting"] for _, report in ranks]
            self.assertEqual([r["resyncs"] for r in reports], [4] * world_size)
            self.assertGreater(sum(r["broadcast_entries_missing"] for r in reports), 0)
            for parameters, _ in ranks[1:]:
                self.assertTrue(torch.equal(parameters["resynced"], reference["resynced"]))
        for rank, (parameters, _) in enumerate(ranks[1:], start=1):
            for run in ("dlcp_bf16", "hook_fp16"):
                with self.subTest(rank=rank, check=f"{run} replicas identical"):
                    self.assertTrue(torch.equal(parameters[run], reference[run]))
        with self.subTest(check="bf16 sends about half the bytes"):
            for _, report in ranks:
                # The same training steps; per gradient byte about half (headers aside).
                # Over either path: UDP, or shared memory between the ranks of this host.
                def sent(counters):
                    return counters["bytes_sent"] + counters["local_bytes_sent"]
                ratio = sent(report["bf16_transport"]) / sent(report["fp32_transport"])
                self.assertLess(ratio, 0.7, report)
        exact_step = reference["gloo"] - reference["initial"]
        for run in ("dlcp_bf16", "hook_fp16"):
            with self.subTest(check=f"{run} moves the model like the exact run"):
                error = (reference[run] - reference["gloo"]).norm() / exact_step.norm()
                print(f"{world_size} ranks, {run}: update error {error:.4f}")
                self.assertLess(error.item(), 0.05)
        for run in ("dlcp_lossy", "hook_lossy"):
            with self.subTest(check=f"{run} moves the model like the exact run"):
                # Lost contributions perturb the average, so the lossy run's total update stays
                # near the exact one instead of matching it.
                error = (reference[run] - reference["gloo"]).norm() / exact_step.norm()
                print(f"{world_size} ranks, {run}: update error {error:.3f}")
                self.assertLess(error.item(), 0.5)

    def test_two_ranks_gloo_default_group(self):
        self.check_world(2, "gloo")

    def test_four_ranks_dlcp_default_group(self):
        self.check_world(4, "dlcp")


if __name__ == "__main__":
    unittest.main()
