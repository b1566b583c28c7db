"""The dlcp backend against gloo: every collective, 2, 3 and 4 processes, several dtypes and sizes
(0 and odd ones included), exact results bit for bit and float sums within tolerance, and bad
arguments refused with a RuntimeError on every rank (conformance_worker.py)."""

import json
import os
import tempfile
import unittest

from test_ddp import run_ranks


class ConformanceTest(unittest.TestCase):
    def check_world(self, world_size):
        with tempfile.TemporaryDirectory() as output:
            run_ranks(world_size, None, output, worker="conformance_worker.py")
            for rank in range(world_size):
                with open(os.path.join(output, f"report{rank}.json")) as file:
                    report = json.load(file)
                with self.subTest(world=world_size, rank=rank):
                    self.assertGreater(report["checks"], 300)
                    self.assertEqual(report["failures"], [])

    def test_two_processes(self):
        self.check_world(2)

    def test_three_processes(self):
        self.check_world(3)

    def test_four_processes(self):
        self.check_world(4)


if __name__ == "__main__":
    unittest.main()
