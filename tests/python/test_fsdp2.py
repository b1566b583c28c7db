"""FSDP2 (torch's fully_shard, torch >= 2.7) over the dlcp backend: a short torchrun job of
examples/fashion_mnist --mode fsdp2, whose gradients are reduce-scattered under the loss budget
(with injected loss) and whose parameters are all-gathered loss-free, beside the same job over
gloo. Skipped under torch 1.13, which has no FSDP2."""

import os
import unittest

import torch

from test_teardown import DATA, TORCHRUN, train_record

TORCH_VERSION = tuple(int(part) for part in torch.__version__.split("+")[0].split(".")[:2])


@unittest.skipUnless(TORCH_VERSION >= (2, 7) and os.path.isdir(DATA) and os.path.exists(TORCHRUN),
                     "needs torch >= 2.7 (FSDP2 on CPU), dataset-fashion-mnist and torchrun")
class Fsdp2Test(unittest.TestCase):
    def run_job(self, mode, *extra):
        return train_record(self, 2, mode, *extra)

    def test_gradients_lose_within_budget_and_training_learns(self):
        gloo = self.run_job("gloo-fsdp2")
        lossy = self.run_job("fsdp2", "--loss-budget", "0.05", "--drop-rate", "0.02")
        # Ten classes: a stalled run scores about 0.1.
        for record in (gloo, lossy):
            self.assertGreater(record["epochs"][-1]["test_accuracy"], 0.4)
        statistics = [epoch["dlcp"] for epoch in lossy["epochs"]]
        delivered = [s["delivered_fraction"] for s in statistics]
        # Injected loss reached the gradients, and the budget bounded what was lost.
        self.assertTrue(all(0.94 <= d < 1.0 for d in delivered), delivered)
        self.assertTrue(all(s["lossy_collectives"] > 0 for s in statistics), statistics)
        # A sanity bound for so short a run: it catches training that stalls, not a small gap.
        self.assertGreater(lossy["final_accuracy"], gloo["final_accuracy"] - 0.15)

    def test_reliable_fsdp2_matches_gloo(self):
        # Budget 0: every gradient arrives; dlcp and gloo differ only in summation order.
        gloo = self.run_job("gloo-fsdp2")
        reliable = self.run_job("fsdp2")
        self.assertEqual(reliable["epochs"][-1]["dlcp"]["delivered_fraction"], 1.0)
        self.assertAlmostEqual(reliable["final_accuracy"], gloo["final_accuracy"], delta=0.02)


if __name__ == "__main__":
    unittest.main()
