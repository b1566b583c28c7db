#!/usr/bin/python3
"""Plots `dlcp demo` results: iteration time p50/p99 per system and the distribution of
iteration times on the congested network, or (the long-link scenario) p50/p99 per system for each
round trip and loss pattern. Usage: plot_demo.py demo.json demo.png"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def bars(axis, network, title):
    systems = [s["system"] for s in network["systems"]]
    p50 = [s["iter_p50_ms"] for s in network["systems"]]
    p99 = [s["iter_p99_ms"] for s in network["systems"]]
    positions = range(len(systems))
    axis.barh([p - 0.2 for p in positions], p50, height=0.4, label="p50")
    axis.barh([p + 0.2 for p in positions], p99, height=0.4, label="p99")
    axis.set_yticks(list(positions))
    axis.set_yticklabels(systems)
    axis.invert_yaxis()
    axis.set_xlabel("iteration time (ms)")
    axis.set_title(title)
    axis.legend()


def long_link(summary):
    networks = summary["long_link"]
    figure, axes = plt.subplots(1, len(networks), figsize=(6 * len(networks), 4.5), squeeze=False)
    for axis, network in zip(axes[0], networks):
        loss = "{:.2%} {}".format(network["loss_rate"], network["loss"])
        bars(axis, network, "long link, round trip {:g} ms, {}".format(network["rtt_ms"], loss))
    figure.tight_layout()
    figure.savefig(sys.argv[2], dpi=110)


def main():
    with open(sys.argv[1]) as f:
        summary = json.load(f)
    if "long_link" in summary:
        long_link(summary)
        return
    panels = 3 if "clean" in summary else 2
    figure, axes = plt.subplots(1, panels, figsize=(6 * panels, 4.5))
    bars(axes[0], summary, "congested network (gray failure, load)")
    for name, times in summary.get("iterations_ms", {}).items():
        ordered = sorted(times)
        fractions = [(i + 1) / len(ordered) for i in range(len(ordered))]
        axes[1].step(ordered, fractions, where="post", label=name)
    axes[1].set_xscale("log")
    axes[1].set_xlabel("iteration time (ms)")
    axes[1].set_ylabel("fraction of iterations")
    axes[1].set_title("iteration time distribution (congested)")
    axes[1].legend(fontsize="small")
    if "clean" in summary:
        bars(axes[2], summary["clean"], "clean network")
    figure.tight_layout()
    figure.savefig(sys.argv[2], dpi=110)


if __name__ == "__main__":
    main()
