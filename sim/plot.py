#!/usr/bin/python3
"""Plots dlcp-sim results: one PNG per scenario JSON, and a scale plot when given several.

Usage: plot.py RESULT.json [RESULT.json ...] [-o OUTPUT_DIR]
Per scenario: mean/p99 iteration time and mean/p99 gradient FCT per scheme (bars).
With several scenarios: dlcp's training speed-up and p99 gradient-FCT reduction against each
baseline, by number of hosts.
"""

import argparse
import json
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def scenario_plot(doc, out_dir):
    results = {k: v for k, v in doc["results"].items() if "error" not in v}
    schemes = list(results)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    width = 0.38
    x = range(len(schemes))
    for ax, group, unit, title in (
            (axes[0], "iteration_ms", "ms", "Iteration time"),
            (axes[1], "gradient_fct_us", "us", "Gradient flow completion time")):
        means = [results[s][group]["mean"] or 0 for s in schemes]
        p99s = [results[s][group]["p99"] or 0 for s in schemes]
        ax.bar([i - width / 2 for i in x], means, width, label="mean")
        ax.bar([i + width / 2 for i in x], p99s, width, label="p99")
        ax.set_xticks(list(x))
        ax.set_xticklabels(schemes)
        ax.set_ylabel(unit)
        ax.set_title(title)
        ax.legend()
    fig.suptitle(f"{doc['scenario']}: {doc['description']}", fontsize=9)
    fig.tight_layout()
    path = os.path.join(out_dir, doc["scenario"] + ".png")
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def scale_plot(docs, out_dir):
    docs = sorted(docs, key=lambda d: d["config"]["hosts"])
    baselines = sorted({b for d in docs for b in d.get("versus", {})})
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for baseline in baselines:
        hosts = [d["config"]["hosts"] for d in docs if baseline in d.get("versus", {})]
        speedup = [d["versus"][baseline]["training_speedup"] for d in docs
                   if baseline in d.get("versus", {})]
        lower = [d["versus"][baseline]["gradient_fct_p99_lower_percent"] for d in docs
                 if baseline in d.get("versus", {})]
        axes[0].plot(hosts, speedup, marker="o", label=baseline)
        axes[1].plot(hosts, lower, marker="o", label=baseline)
    axes[0].set_title("dlcp training speed-up against")
    axes[0].set_xlabel("hosts")
    axes[0].set_ylabel("baseline iteration time / dlcp's")
    axes[1].set_title("dlcp p99 gradient FCT lower than")
    axes[1].set_xlabel("hosts")
    axes[1].set_ylabel("%")
    for ax in axes:
        ax.legend()
        ax.grid(alpha=0.3)
    fig.tight_layout()
    path = os.path.join(out_dir, "scale.png")
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+")
    parser.add_argument("-o", "--out", default=".")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    docs = []
    for path in args.results:
        with open(path) as f:
            docs.append(json.load(f))
    for doc in docs:
        print(scenario_plot(doc, args.out))
    if len(docs) > 1:
        print(scale_plot(docs, args.out))


if __name__ == "__main__":
    main()
