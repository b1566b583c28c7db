"""Ratios reported by the backend, the hook and the training example (unit-tested with fixed
inputs in tests/python/test_metrics.py)."""

import math

import numpy as np


def delivered_fraction(contributions_expected, contributions_received):
    """Share of the gradient contributions that arrived; 1 when nothing was expected."""
    if contributions_expected < 0 or contributions_received < 0:
        raise ValueError("contribution counts cannot be negative")
    if contributions_received > contributions_expected:
        raise ValueError(
            f"received {contributions_received} contributions of {contributions_expected} expected"
        )
    if contributions_expected == 0:
        return 1.0
    return contributions_received / contributions_expected


def per_item(total, count):
    """total / count, or 0 when there is nothing to divide by (no buckets, no epochs yet)."""
    return total / count if count else 0.0


def share(part, whole):
    """part / whole as a fraction, e.g. Python time per bucket over transfer time per bucket."""
    if whole <= 0:
        return math.inf if part > 0 else 0.0
    return part / whole


def accuracy(correct, total):
    """Fraction of correct predictions."""
    if total <= 0:
        raise ValueError("accuracy of an empty test set")
    return correct / total


def replica_divergence(replicas):
    """How far the ranks' parameter vectors drifted apart: the largest absolute difference from
    rank 0 (``max_abs``) and that difference relative to the largest |parameter| of rank 0
    (``relative``). `replicas` holds one flat vector per rank (tensors, arrays or lists)."""
    replicas = [np.asarray(replica, dtype=np.float64).reshape(-1) for replica in replicas]
    if not replicas:
        raise ValueError("no replicas to compare")
    reference = replicas[0]
    max_abs = 0.0
    for rank, replica in enumerate(replicas[1:], start=1):
        if replica.shape != reference.shape:
            raise ValueError(f"rank {rank} has {replica.size} parameters, rank 0 {reference.size}")
        if replica.size:
            max_abs = max(max_abs, float(np.max(np.abs(replica - reference))))
    scale = float(np.max(np.abs(reference))) if reference.size else 0.0
    return {"max_abs": max_abs, "relative": share(max_abs, scale)}


def mean(values):
    """Arithmetic mean of a non-empty sequence."""
    values = list(values)
    if not values:
        raise ValueError("mean of nothing")
    return sum(values) / len(values)


def percentage_points(value, reference):
    """value - reference of two fractions, in percentage points (0.887 vs 0.890: -0.3)."""
    return 100.0 * (value - reference)


def time_to_accuracy(history, target):
    """Seconds of training until the test accuracy first reached `target`, or None.
    `history` is [(elapsed_seconds, accuracy)] in epoch order."""
    for elapsed, reached in history:
        if reached >= target:
            return elapsed
    return None


def speedup(baseline_seconds, seconds):
    """How many times faster than the baseline (20 s against 30 s: 1.5), or None when either
    time is missing (a run that never reached its target)."""
    if baseline_seconds is None or seconds is None:
        return None
    if baseline_seconds <= 0 or seconds <= 0:
        raise ValueError(f"times must be positive, got {baseline_seconds} and {seconds}")
    return baseline_seconds / seconds


def summarize_totals(totals):
    """A dict of a process group's CollectiveTotals, with the delivered fraction."""
    return {
        "collectives": totals.collectives,
        "lossy_collectives": totals.lossy_collectives,
        "entries": totals.entries,
        "contributions_expected": totals.contributions_expected,
        "contributions_received": totals.contributions_received,
        "delivered_fraction": delivered_fraction(
            totals.contributions_expected, totals.contributions_received
        ),
        "broadcast_entries_missing": totals.broadcast_entries_missing,
        "collective_seconds": totals.seconds,
        "seconds_per_collective": per_item(totals.seconds, totals.collectives),
    }
