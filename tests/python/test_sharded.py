"""Sharded training (examples/fashion_mnist, --mode sharded): a short torchrun job over the dlcp
backend whose gradients' reduce-scatter carries the loss budget and whose parameter all-gather is
loss-free, beside the same job over gloo."""

import os
import unittest

from test_teardown import DATA, TORCHRUN, train_record


@unittest.skipUnless(os.path.isdir(DATA)
                     and os.path.exists(TORCHRUN),
                     "needs dataset-fashion-mnist and torchrun")
class ShardedTest(unittest.TestCase):
    def run_job(self, mode, *extra):
        return train_record(self, 3, mode, *extra)

    def test_budget_applies_to_gradients_only_and_training_learns(self):
        gloo = self.run_job("gloo-sharded")
        # Over UDP: the local path (all ranks share this host) is loss-free, so the budget would
        # never cut a tail there.
        lossy = self.run_job("sharded", "--loss-budget", "0.05", "--no-local-path")
        # Ten classes: a stalled run scores about 0.1. Lossy runs of this short job ended as low
        # as 0.547 (see the bound below), so their floor is lower than gloo's.
        for record, floor in ((gloo, 0.55), (lossy, 0.4)):
            last = record["epochs"][-1]
            # Every replica holds the same parameters: the all-gather is loss-free.
            self.assertEqual(last["divergence"]["max_abs"], 0.0)
            self.assertGreater(last["test_accuracy"], floor)
        delivered = [epoch["dlcp"]["delivered_fraction"] for epoch in lossy["epochs"]]
        self.assertTrue(all(0.94 <= d < 1.0 for d in delivered), delivered)
        self.assertGreater(lossy["epochs"][-1]["dlcp"]["lossy_collectives"], 0)
        # A sanity bound for so short a run (3000 images, 2 epochs, on the steep part of the
        # learning curve, where 5% lost gradient entries moved the second epoch's accuracy by
        # 0 to 17 points in repeated runs): it catches training that stalls, not a small gap. The
        # accuracy comparison at scale is docs/pytorch.md's, "Sharded training".
        # (A CI run ended 17 points below gloo: 0.498 against 0.670.)
        self.assertGreater(lossy["final_accuracy"], gloo["final_accuracy"] - 0.25)


if __name__ == "__main__":
    unittest.main()
