"""Ratios, layer positions and bucket slicing of the PyTorch integration, on fixed inputs."""

import math
import unittest

import torch

from dlcp.torch import metrics
from dlcp.torch.address import default_bind_host
from dlcp.torch.layers import bucket_slices, layer_budgets, layer_positions


class DeliveredFractionTest(unittest.TestCase):
    def test_share_of_expected_contributions(self):
        self.assertEqual(metrics.delivered_fraction(200, 190), 0.95)
        self.assertEqual(metrics.delivered_fraction(3, 0), 0.0)

    def test_nothing_expected_counts_as_all_delivered(self):
        self.assertEqual(metrics.delivered_fraction(0, 0), 1.0)

    def test_impossible_counts_are_refused(self):
        with self.assertRaises(ValueError):
            metrics.delivered_fraction(10, 11)
        with self.assertRaises(ValueError):
            metrics.delivered_fraction(-1, 0)


class RatioTest(unittest.TestCase):
    def test_per_item(self):
        self.assertEqual(metrics.per_item(3.0, 4), 0.75)
        self.assertEqual(metrics.per_item(3.0, 0), 0.0)

    def test_share(self):
        self.assertEqual(metrics.share(0.5, 2.0), 0.25)
        self.assertEqual(metrics.share(0.0, 0.0), 0.0)
        self.assertTrue(math.isinf(metrics.share(1.0, 0.0)))

    def test_accuracy(self):
        self.assertEqual(metrics.accuracy(8765, 10000), 0.8765)
        with self.assertRaises(ValueError):
            metrics.accuracy(0, 0)

    def test_mean_and_percentage_points(self):
        self.assertAlmostEqual(metrics.mean([0.5, 0.7, 0.9]), 0.7)
        with self.assertRaises(ValueError):
            metrics.mean([])
        self.assertAlmostEqual(metrics.percentage_points(0.887, 0.890), -0.3)

    def test_time_to_accuracy(self):
        history = [(10.0, 0.70), (20.0, 0.84), (30.0, 0.86), (40.0, 0.85)]
        self.assertEqual(metrics.time_to_accuracy(history, 0.85), 30.0)
        self.assertEqual(metrics.time_to_accuracy(history, 0.70), 10.0)
        self.assertIsNone(metrics.time_to_accuracy(history, 0.90))

    def test_speedup(self):
        self.assertAlmostEqual(metrics.speedup(30.0, 20.0), 1.5)
        self.assertAlmostEqual(metrics.speedup(10.0, 40.0), 0.25)
        self.assertIsNone(metrics.speedup(None, 20.0))
        self.assertIsNone(metrics.speedup(30.0, None))
        with self.assertRaises(ValueError):
            metrics.speedup(0.0, 20.0)


class ReplicaDivergenceTest(unittest.TestCase):
    def test_identical_replicas(self):
        divergence = metrics.replica_divergence([[1.0, -2.0], [1.0, -2.0]])
        self.assertEqual(divergence, {"max_abs": 0.0, "relative": 0.0})

    def test_largest_difference_from_rank_zero(self):
        replicas = [torch.tensor([1.0, -4.0, 2.0]), [1.5, -4.0, 2.0], [1.0, -3.0, 2.0]]
        self.assertEqual(
            metrics.replica_divergence(replicas), {"max_abs": 1.0, "relative": 0.25}
        )

    def test_mismatched_sizes_are_refused(self):
        with self.assertRaises(ValueError):
            metrics.replica_divergence([[1.0, 2.0], [1.0]])


class TotalsTest(unittest.TestCase):
    def test_summary_of_totals(self):
        class Totals:
            collectives = 4
            lossy_collectives = 2
            entries = 1000
            contributions_expected = 2000
            contributions_received = 1900
            broadcast_entries_missing = 0
            seconds = 0.2

        summary = metrics.summarize_totals(Totals())
        self.assertEqual(summary["delivered_fraction"], 0.95)
        self.assertAlmostEqual(summary["seconds_per_collective"], 0.05)


class LayerTest(unittest.TestCase):
    def test_positions_follow_registration_order_and_skip_frozen(self):
        model = torch.nn.Sequential(
            torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 8), torch.nn.Linear(8, 2)
        )
        model[2].weight.requires_grad_(False)
        positions, num_layers = layer_positions(model)
        self.assertEqual(num_layers, 3)
        self.assertEqual(positions[id(model[0].weight)], 0)
        self.assertEqual(positions[id(model[0].bias)], 0)
        self.assertEqual(positions[id(model[2].bias)], 1)
        self.assertNotIn(id(model[2].weight), positions)
        self.assertEqual(positions[id(model[3].weight)], 2)

    def test_budgets_from_number_sequence_and_function(self):
        self.assertEqual(layer_budgets(0.05, 3), [0.05, 0.05, 0.05])
        self.assertEqual(layer_budgets([0.0, 0.1], 2), [0.0, 0.1])
        self.assertEqual(layer_budgets(lambda layer, n: layer / (10 * n), 2), [0.0, 0.05])

    def test_bad_budgets_name_the_layer(self):
        with self.assertRaisesRegex(ValueError, "layer 1 must be within"):
            layer_budgets([0.0, 1.5], 2)
        with self.assertRaisesRegex(ValueError, "3 entries but the model has 2 layers"):
            layer_budgets([0.0, 0.1, 0.2], 2)

    def test_neighbours_of_one_layer_share_a_slice(self):
        # DDP lays a bucket out back to front: layer 2's bias and weight, then layer 1's.
        slices = bucket_slices([2, 2, 1, 1, 0], [10, 40, 0, 30, 5], [0.0, 0.01, 0.1])
        self.assertEqual(slices, [(0, 50, 2, 0.1), (50, 30, 1, 0.01), (80, 5, 0, 0.0)])


class BindHostTest(unittest.TestCase):
    def test_explicit_variable_wins(self):
        environment = {"DLCP_BIND_HOST": "10.1.2.3", "MASTER_ADDR": "127.0.0.1"}
        self.assertEqual(default_bind_host(environment), "10.1.2.3")

    def test_loopback_master_and_no_master(self):
        self.assertEqual(default_bind_host({"MASTER_ADDR": "localhost"}), "127.0.0.1")
        self.assertEqual(default_bind_host({}), "127.0.0.1")


if __name__ == "__main__":
    unittest.main()
