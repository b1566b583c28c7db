#!/usr/bin/env python3
"""Says where a scheme's gradient tail comes from, from a flow file of `dlcp-sim --flows`.

    sim/flows.py [--link-gbps G] [--burst-us T] [--iterations N] OUT/SCENARIO-SCHEME-flows.csv

Prints, for the gradient flows:
  - completion times by phase (push, pull, reduce-scatter, all-gather), and each phase's share
    of the slowest 1%;
  - the layers the slowest 1% belong to;
  - completion times by iteration (--iterations, the run's, 3 by default), which shows whether
    one iteration, such as the first, lockstep one, makes the tail, and when each phase of each
    iteration began and ended;
  - with a parameter server, how long each server's pulls trail its last push in each
    iteration, and at most how fast its link sent them meanwhile;
  - with a parameter server, what each server takes in per iteration (pushed bytes, payload
    only) and how long its link needs for that at line rate: a bound on the pushes' tail;
  - and how many pushes start toward one server at once (within --burst-us): the depth of the
    incast that TCP's synchronized timeouts come from;
  - the longest run of messages from one host to one peer each posted before the one before it
    finished: a backlog at the sender, behind its own NIC or pacer.
"""

import argparse
import collections
import csv
import math
import signal
import sys


def percentile(sorted_values, p):
    """Nearest rank, as dlcp-sim's own statistics."""
    rank = max(1, math.ceil(p / 100.0 * len(sorted_values)))
    return sorted_values[min(rank, len(sorted_values)) - 1]


def read(path, kind="gradient"):
    """The flows of one kind (gradient or background); exits if a gradient file has none."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if rows and "finished_us" not in rows[0]:
        sys.exit(f"{path}: not a dlcp-sim flow file")
    flows = []
    for row in rows:
        if row["kind"] != kind:
            continue
        posted = float(row["posted_us"])
        flows.append(
            {
                "phase": row["phase"],
                "src": int(row["src"]),
                "dst": int(row["dst"]),
                "bytes": int(row["bytes"]),
                "layer": int(row["layer"]),
                "posted": posted,
                "fct": float(row["finished_us"]) - posted,
            }
        )
    if not flows and kind == "gradient":
        sys.exit(f"{path}: no gradient flows")
    return flows


def fct_table(label, groups, tail_from, tail_size):
    """One row per group: FCT statistics and the group's share of the slowest flows."""
    print(f"| {label} | flows | FCT mean (us) | FCT p50 (us) | FCT p99 (us) | FCT max (us) "
          "| share of the slowest 1% |")
    print("|---|---|---|---|---|---|---|")
    for name, values in groups:
        values = sorted(values)
        slow = sum(1 for v in values if v >= tail_from)
        print(
            f"| {name} | {len(values)} | {sum(values) / len(values):.0f} "
            f"| {percentile(values, 50):.0f} | {percentile(values, 99):.0f} | {values[-1]:.0f} "
            f"| {100.0 * slow / tail_size:.1f}% |"
        )


def tail_threshold(flows):
    """The p99 FCT and the flows at or above it."""
    tail_from = percentile(sorted(f["fct"] for f in flows), 99)
    return tail_from, [f for f in flows if f["fct"] >= tail_from]


def phase_table(flows):
    tail_from, tail = tail_threshold(flows)
    print(f"gradient flows: {len(flows)}, p99 {tail_from:.0f} us; slowest 1%: {len(tail)} flows")
    by_phase = collections.defaultdict(list)
    for f in flows:
        by_phase[f["phase"]].append(f["fct"])
    fct_table("phase", sorted(by_phase.items()), tail_from, len(tail))
    layers = collections.Counter(f["layer"] for f in tail)
    top = ", ".join(f"{layer} ({count})" for layer, count in layers.most_common(8))
    print(f"\nlayers of the slowest 1% (forward order, 0 = input side; flows): {top}")


def iterations_of(flows, iterations):
    """Each flow's iteration (0-based), by its rank among the flows with its phase, ends and
    layer: a workload posts every such flow equally often in each iteration, in order."""
    groups = collections.defaultdict(list)
    for i, f in enumerate(flows):
        groups[(f["phase"], f["src"], f["dst"], f["layer"])].append(i)
    result = [0] * len(flows)
    for key, members in groups.items():
        if len(members) % iterations:
            sys.exit(
                f"{len(members)} flows of phase {key[0]} from {key[1]} to {key[2]} for layer "
                f"{key[3]} do not split into {iterations} iterations: is --iterations the run's?"
            )
        members.sort(key=lambda i: flows[i]["posted"])
        for rank, i in enumerate(members):
            result[i] = rank * iterations // len(members)
    return result


def iteration_table(flows, iteration_of_flow):
    tail_from, tail = tail_threshold(flows)
    by_iteration = collections.defaultdict(list)
    for f, iteration in zip(flows, iteration_of_flow):
        by_iteration[iteration + 1].append(f["fct"])
    print()
    fct_table("iteration", sorted(by_iteration.items()), tail_from, len(tail))


def phase_spans(flows, iteration_of_flow):
    """{(iteration, phase): (first posted, last finished)} in microseconds."""
    spans = {}
    for f, iteration in zip(flows, iteration_of_flow):
        key = (iteration, f["phase"])
        end = f["posted"] + f["fct"]
        first, last = spans.get(key, (f["posted"], end))
        spans[key] = (min(first, f["posted"]), max(last, end))
    return spans


def span_table(flows, iteration_of_flow):
    print("\n| iteration | phase | first posted (ms) | last finished (ms) |")
    print("|---|---|---|---|")
    for (iteration, phase), (first, last) in sorted(phase_spans(flows, iteration_of_flow).items()):
        print(f"| {iteration + 1} | {phase} | {first / 1e3:.1f} | {last / 1e3:.1f} |")


def pull_tails(flows, iteration_of_flow):
    """{(iteration, server): (last push finished, last pull finished, pull bytes finished after
    the last push)}, times in microseconds, for every server that both took pushes and pulled.
    The bytes bound what the server sent during the trail from above: a pull finishing after
    the last push may have sent part of itself before it."""
    last_push = {}
    pulls = collections.defaultdict(list)
    for f, iteration in zip(flows, iteration_of_flow):
        end = f["posted"] + f["fct"]
        if f["phase"] == "push":
            key = (iteration, f["dst"])
            last_push[key] = max(last_push.get(key, end), end)
        elif f["phase"] == "pull":
            pulls[(iteration, f["src"])].append((end, f["bytes"]))
    tails = {}
    for key, ends in pulls.items():
        if key not in last_push:
            continue
        pushed = last_push[key]
        after = sum(size for end, size in ends if end > pushed)
        tails[key] = (pushed, max(end for end, _ in ends), after)
    return tails


def pull_tail_table(flows, iteration_of_flow):
    tails = pull_tails(flows, iteration_of_flow)
    if not tails:
        return
    print("\n| iteration | server | last push finished (ms) | pulls trail it by (ms) "
          "| pull MB finished after it | at most (Gbit/s) |")
    print("|---|---|---|---|---|---|")
    for (iteration, server), (pushed, pulled, after) in sorted(tails.items()):
        trail = pulled - pushed
        rate = f"{after * 8 / (trail * 1e3):.1f}" if trail > 0 else "-"
        print(f"| {iteration + 1} | {server} | {pushed / 1e3:.1f} | {trail / 1e3:.1f} "
              f"| {after / 1e6:.1f} | {rate} |")


def server_loads(flows):
    """Bytes each server takes in per iteration from pushes, and the iterations; ({}, 0) when
    there are no pushes."""
    pushes = [f for f in flows if f["phase"] == "push"]
    if not pushes:
        return {}, 0
    # Every worker pushes every slice once per iteration. Two slices of one layer may go to one
    # server with the same size, so take the usual count, not the largest.
    per_key = collections.Counter((f["src"], f["dst"], f["layer"], f["bytes"]) for f in pushes)
    iterations = collections.Counter(per_key.values()).most_common(1)[0][0]
    intake = collections.Counter()
    for f in pushes:
        intake[f["dst"]] += f["bytes"]
    return {s: b / iterations for s, b in intake.items()}, iterations


def server_intake(flows, link_gbps):
    per_iteration, iterations = server_loads(flows)
    if not per_iteration:
        return
    mean = sum(per_iteration.values()) / len(per_iteration)
    heaviest = max(per_iteration, key=per_iteration.get)
    bytes_per_us = link_gbps * 1e3 / 8
    print(f"\nservers: {len(per_iteration)}, iterations: {iterations}")
    print("| per server and iteration | pushed bytes (MB) | at line rate (us) |")
    print("|---|---|---|")
    for label, value in (
        ("mean", mean),
        ("least", min(per_iteration.values())),
        (f"most (host {heaviest})", per_iteration[heaviest]),
    ):
        print(f"| {label} | {value / 1e6:.2f} | {value / bytes_per_us:.0f} |")
    print(f"most / mean: {per_iteration[heaviest] / mean:.2f}")


def largest_bursts(flows, window_us):
    """The most pushes posted toward each server within any window of window_us (inclusive)."""
    posted = collections.defaultdict(list)
    for f in flows:
        if f["phase"] == "push":
            posted[f["dst"]].append(f["posted"])
    bursts = {}
    for server, times in posted.items():
        times.sort()
        first = 0
        most = 0
        for last, t in enumerate(times):
            while times[first] < t - window_us:
                first += 1
            most = max(most, last - first + 1)
        bursts[server] = most
    return bursts


def burst_table(flows, window_us):
    bursts = largest_bursts(flows, window_us)
    if not bursts:
        return
    workers = len({f["src"] for f in flows if f["phase"] == "push"})
    deepest = max(bursts, key=bursts.get)
    print(
        f"\npushes posted toward one server within {window_us:g} us, at most: "
        f"{bursts[deepest]} (host {deepest}; {bursts[deepest] / workers:.1f} per worker), "
        f"servers' median {percentile(sorted(bursts.values()), 50)}"
    )


def sender_backlogs(flows):
    """Per (source, destination): the longest run of consecutive messages each posted before the
    one before it had finished and taking longer than it, as (length, first message of the run,
    last message). Completion times that keep growing while messages keep coming mean a backlog
    at the sender (its NIC or its pacer); in a healthy run they go up and down. Runs of one
    message are left out."""
    by_pair = collections.defaultdict(list)
    for f in flows:
        by_pair[(f["src"], f["dst"])].append(f)
    runs = {}
    for pair, messages in by_pair.items():
        messages.sort(key=lambda f: f["posted"])
        best = None
        start = 0
        for i in range(1, len(messages) + 1):
            previous = messages[i - 1]
            queued = (
                i < len(messages)
                and messages[i]["posted"] < previous["posted"] + previous["fct"]
                and messages[i]["fct"] > previous["fct"]
            )
            if queued:
                continue
            length = i - start
            if length > 1 and (best is None or length > best[0]):
                best = (length, messages[start], messages[i - 1])
            start = i
        if best:
            runs[pair] = best
    return runs


def backlog_table(flows):
    runs = sender_backlogs(flows)
    if not runs:
        return
    (src, dst), (length, first, last) = max(runs.items(), key=lambda item: item[1][0])
    long_runs = sum(1 for run in runs.values() if run[0] >= 8)
    print(
        f"\nlongest backlog toward one peer: {length} messages from host {src} to host {dst}, each "
        f"posted before the one before it finished and slower, from {first['posted'] / 1e3:.2f} "
        f"ms; FCT {first['fct']:.0f} -> {last['fct']:.0f} us. Sender-destination pairs with such "
        f"a run of 8 or more: {long_runs} of {len({(f['src'], f['dst']) for f in flows})}"
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("flows", help="a flow file written by dlcp-sim --flows")
    parser.add_argument("--link-gbps", type=float, default=100.0, help="a host link's rate")
    parser.add_argument(
        "--burst-us", type=float, default=50.0, help="the window for pushes starting at once"
    )
    parser.add_argument(
        "--iterations", type=int, default=3, help="the run's iterations (dlcp-sim --iterations)"
    )
    args = parser.parse_args()
    if args.iterations < 1:
        sys.exit("--iterations must be at least 1")
    if not args.link_gbps > 0:
        sys.exit("--link-gbps must be positive")
    if not args.burst_us >= 0:
        sys.exit("--burst-us must not be negative")
    flows = read(args.flows)
    iteration_of_flow = iterations_of(flows, args.iterations)  # refuses a wrong count first
    phase_table(flows)
    iteration_table(flows, iteration_of_flow)
    span_table(flows, iteration_of_flow)
    pull_tail_table(flows, iteration_of_flow)
    server_intake(flows, args.link_gbps)
    burst_table(flows, args.burst_us)
    backlog_table(flows)


if __name__ == "__main__":
    # Piped into head, stop quietly as other command-line tools do, not with a traceback.
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    main()
