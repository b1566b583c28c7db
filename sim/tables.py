#!/usr/bin/env python3
"""Prints the Markdown tables of docs/simulation.md from stored dlcp-sim documents.

    sim/tables.py FILE...            one results table per document, then its dlcp counters
    sim/tables.py --summary FILE...  one row per document: dlcp and the gains against each scheme
    sim/tables.py --scale FILE...    the scale table: gains against each baseline per document
    sim/tables.py --timers FILE...   pFabric's timers: one row per setting, backoff -> fixed -> probe

The per-scenario, scale and variant tables of the docs come from stored documents through this
script, so a re-run followed by this script refreshes them.
"""

import argparse
import json
import sys

BASELINES = ["dctcp", "newreno", "pfabric", "pias"]
NAMES = {"dctcp": "DCTCP", "newreno": "NewReno", "pfabric": "pFabric", "pias": "PIAS"}


def load(path):
    with open(path) as f:
        document = json.load(f)
    if "results" not in document or "config" not in document:
        sys.exit(f"{path}: not a dlcp-sim scenario document")
    return document


def ms(value):
    return "-" if value is None else f"{value:.2f}"


def us(value):
    """None where nothing was measured (no background flows with --load 0)."""
    return "-" if value is None else f"{value:.0f}"


def results_table(document):
    header = (
        "| scheme | iterations | iteration mean (ms) | iteration p99 (ms) | gradient FCT mean (us) "
        "| gradient FCT p99 (us) | background FCT p99 (us) | dlcp speed-up vs it "
        "| dlcp p99 gradient FCT lower |"
    )
    lines = [header, "|---|---|---|---|---|---|---|---|---|"]
    versus = document.get("versus", {})
    for scheme, result in document["results"].items():
        if "error" in result:
            lines.append(f"| {scheme} | failed: {result['error']} |")
            continue
        gain = versus.get(scheme)
        speedup = f"{gain['training_speedup']:.2f}x" if gain else "-"
        lower = f"{gain['gradient_fct_p99_lower_percent']:.1f}%" if gain else "-"
        iteration = result["iteration_ms"]
        gradient = result["gradient_fct_us"]
        lines.append(
            f"| {scheme} | {result['iterations_finished']}/{result['iterations_expected']} "
            f"| {ms(iteration['mean'])} | {ms(iteration['p99'])} | {us(gradient['mean'])} "
            f"| {us(gradient['p99'])} | {us(result['background_fct_us']['p99'])} "
            f"| {speedup} | {lower} |"
        )
    return "\n".join(lines)


def dlcp_counters(document):
    result = document["results"].get("dlcp")
    if not result or "dlcp" not in result:
        return ""
    counters = result["dlcp"]
    switch = result["switch"]
    return "\n".join(
        [
            f"- {counters['data_packets_sent']:,} data packets were sent, "
            f"{counters['retransmitted_packets']:,} of them again in missing-range rounds.",
            f"- The switches refused {switch['dropped_drop_eligible']:,} drop-eligible packets, "
            f"dropped {switch['dropped_full']:,} from full ports and marked "
            f"{switch['ce_marked']:,}.",
            f"- {counters['messages_settled_with_loss']:,} of {counters['messages_settled']:,} "
            f"messages settled with drop-eligible entries missing: "
            f"{100 * counters['entries_missing_share']:.3f}% of entries.",
            f"- Runtime: {result['events'] / 1e6:.1f} M events, {result['wall_s']:.0f} s of wall "
            "time for dlcp.",
        ]
    )


def summary_row(path, document):
    dlcp = document["results"].get("dlcp")
    if not dlcp or "error" in dlcp:
        return f"| {path} | dlcp missing or failed |"
    cells = [
        path,
        f"{ms(dlcp['iteration_ms']['mean'])} / {us(dlcp['gradient_fct_us']['p99'])}",
        f"{dlcp['dlcp']['retransmitted_packets']:,}",
        f"{dlcp['switch']['dropped_drop_eligible'] + dlcp['switch']['dropped_full']:,}",
    ]
    for scheme in BASELINES:
        result = document["results"].get(scheme)
        gain = document.get("versus", {}).get(scheme)
        if not result or not gain:
            cells.append("-")
            continue
        cells.append(
            f"{ms(result['iteration_ms']['mean'])} / {us(result['gradient_fct_us']['p99'])}: "
            f"{gain['training_speedup']:.2f}x, {gain['gradient_fct_p99_lower_percent']:.1f}%"
        )
    return "| " + " | ".join(cells) + " |"


def scale_row(document):
    versus = document.get("versus", {})
    speedups = [
        f"{versus[s]['training_speedup']:.2f}x" if s in versus else "-" for s in BASELINES
    ]
    lowers = [
        f"{versus[s]['gradient_fct_p99_lower_percent']:.1f}%" if s in versus else "-"
        for s in BASELINES
    ]
    hosts = document["config"]["hosts"]
    return f"| {hosts} (`{document['scenario']}`) | " + " | ".join(speedups + lowers) + " |"


TIMERS = ["backoff", "fixed", "probe"]


def timer_of(document):
    return document["config"].get("pfabric_rto", "backoff")


def syns_resent(result):
    """Documents from before the TCP counters did not count them."""
    tcp = result.get("tcp")
    return "not counted" if tcp is None else f"{tcp['gradient']['syn_retransmissions']:,}"


def pfabric(document):
    return document["results"]["pfabric"]


def gain(document):
    return document["versus"]["pfabric"]


def timer_rows(documents):
    """Groups documents that differ only in pFabric's timer; one row per group, timers in order."""
    groups = {}
    for path, document in documents:
        if "pfabric" not in document["results"] or "pfabric" not in document.get("versus", {}):
            sys.exit(f"{path}: no pFabric result to compare")
        setting = {k: v for k, v in document["config"].items() if k != "pfabric_rto"}
        key = json.dumps(setting, sort_keys=True)
        timer = timer_of(document)
        if timer in groups.setdefault(key, {}):
            sys.exit(f"{path}: a second document with the {timer} timer for one setting")
        groups[key][timer] = document
    rows = []
    for key, by_timer in groups.items():
        setting = json.loads(key)
        chain = [by_timer[t] for t in TIMERS if t in by_timer]

        def arrows(cell):
            return " -> ".join(cell(d) for d in chain)

        rows.append(
            (
                (setting["hosts"], setting["compute_jitter"], setting["seed"]),
                [
                    str(setting["hosts"]),
                    f"{setting['compute_jitter']:g}",
                    str(setting["seed"]),
                    " -> ".join(t for t in TIMERS if t in by_timer),
                    arrows(lambda d: ms(pfabric(d)["iteration_ms"]["mean"])),
                    arrows(lambda d: us(pfabric(d)["gradient_fct_us"]["p99"])),
                    arrows(lambda d: syns_resent(pfabric(d))),
                    arrows(lambda d: f"{gain(d)['training_speedup']:.2f}x"),
                    arrows(lambda d: f"{gain(d)['gradient_fct_p99_lower_percent']:.1f}%"),
                ],
            )
        )
    return ["| " + " | ".join(cells) + " |" for _, cells in sorted(rows)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--summary", action="store_true")
    mode.add_argument("--scale", action="store_true")
    mode.add_argument("--timers", action="store_true")
    parser.add_argument("files", nargs="+")
    args = parser.parse_args()
    documents = [(path, load(path)) for path in args.files]
    if args.summary:
        header = [
            "document",
            "dlcp iteration (ms) / p99 FCT (us)",
            "dlcp packets re-sent",
            "dlcp packets dropped (refused or full port)",
        ]
        header += [f"{NAMES[s]}: iteration / p99, speed-up, p99 lower" for s in BASELINES]
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for path, document in documents:
            print(summary_row(path, document))
    elif args.timers:
        header = [
            "hosts",
            "jitter",
            "seed",
            "pFabric's timer",
            "pFabric iteration (ms)",
            "pFabric p99 gradient FCT (us)",
            "pFabric SYNs re-sent",
            "dlcp speed-up vs pFabric",
            "p99 gradient FCT lower",
        ]
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for row in timer_rows(documents):
            print(row)
    elif args.scale:
        speedups = [f"speed-up vs {NAMES[s]}" for s in BASELINES]
        lowers = [f"p99 gradient FCT lower vs {NAMES[s]}" for s in BASELINES]
        header = ["hosts"] + speedups + lowers
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for _, document in documents:
            print(scale_row(document))
    else:
        for path, document in documents:
            print(f"{path}: {document.get('description', '')}\n")
            print(results_table(document))
            counters = dlcp_counters(document)
            if counters:
                print("\n" + counters)
            print()


if __name__ == "__main__":
    main()
