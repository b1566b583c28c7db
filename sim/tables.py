#!/usr/bin/env python3
"""Prints the Markdown tables of docs/simulation.md from stored dlcp-sim documents.

    sim/tables.py FILE...            one results table per document, then its dlcp counters
    sim/tables.py --summary FILE...  one row per document: dlcp and the gains against each scheme
    sim/tables.py --scale FILE...    the scale table: gains against each baseline per document
    sim/tables.py --timers FILE...   pFabric's timers: one row per setting, backoff -> fixed -> probe
    sim/tables.py --ablations FILE...  dlcp with mechanisms turned off (--ablate) or its switch
                                     options changed, a row per document, against its setting
                                     with nothing changed and DCTCP
    sim/tables.py --long-link FILE...  the long-link sweep: a row per setting (hosts, collective,
                                     round trip, loss, seed), dlcp against DCTCP, and the shares
                                     of the loss budget (--budget 0) and parity (--parity K)

The per-scenario, scale and variant tables of the docs come from stored documents through this
script, so a re-run followed by this script refreshes them.
"""

import argparse
import json
import signal
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


# dlcp's --ablate names and the configuration keys they turn off (absent = on). None of them
# changes a baseline's network: DCTCP and NewReno use one band and mark per port anyway.
ABLATIONS = {
    "ecn": "dlcp_ecn_capable",
    "precedence": "dlcp_drop_precedence",
    "queue-marking": "mark_per_queue",
    "receiver-share": "dlcp_receiver_share",
    "best-effort-sharing": "best_effort_shared",
}
# Options that only dlcp feels (no baseline sends drop-eligible packets or uses dlcp's pacers):
# the name the table gives each, its configuration key, its value when changed, and what a
# document without the key had (documents from before the threshold's key was written compared
# the whole port; the pacing key is written only when changed).
DLCP_OPTIONS = {
    "eligible-threshold port": ("eligible_threshold", "port", "port"),
    "dlcp-pacing shared-band": ("dlcp_pacing", "shared_band", "peer"),
}
CHANGE_KEYS = set(ABLATIONS.values()) | {key for key, *_ in DLCP_OPTIONS.values()}


def ablated(config):
    """What a configuration changes for dlcp: the --ablate names it turns off, in ABLATIONS'
    order, then the dlcp-only options it sets."""
    names = [name for name, key in ABLATIONS.items() if config.get(key, True) is False]
    return names + [name for name, (key, value, absent) in DLCP_OPTIONS.items()
                    if config.get(key, absent) == value]


def change(value, reference):
    """Percent change against the reference, as the docs write it (+12.3%)."""
    return f"{100.0 * (value - reference) / reference:+.1f}%"


def versus_dctcp(dlcp, dctcp):
    """dlcp's speed-up (DCTCP's mean iteration over dlcp's) and how much lower its p99 gradient
    FCT is, in percent, as dlcp-sim's own `versus` computes them."""
    speedup = dctcp["iteration_ms"]["mean"] / dlcp["iteration_ms"]["mean"]
    p99, reference = dlcp["gradient_fct_us"]["p99"], dctcp["gradient_fct_us"]["p99"]
    return speedup, 100.0 * (reference - p99) / reference


def ablation_rows(documents):
    """Groups the documents by setting (their configuration but the keys of ablated()); one row
    per document with dlcp, against the group's document with nothing changed and the group's
    DCTCP. Rows sort by collective, hosts, seed, then number of changes."""
    groups = {}
    for path, document in documents:
        config = document["config"]
        setting = {k: v for k, v in config.items() if k not in CHANGE_KEYS}
        key = json.dumps(setting, sort_keys=True)
        off = tuple(ablated(config))
        if off in groups.setdefault(key, {}):
            sys.exit(f"{path}: a second document with `{','.join(off) or 'none'}` for one setting")
        groups[key][off] = (path, document)
    rows = []
    for key, by_off in groups.items():
        setting = json.loads(key)
        if () not in by_off:
            sys.exit(f"{by_off[min(by_off)][0]}: no document without ablations for its setting")
        reference = by_off[()][1]["results"].get("dlcp")
        dctcp = next((d["results"]["dctcp"] for _, d in by_off.values() if "dctcp" in d["results"]),
                     None)
        for off, (path, document) in by_off.items():
            dlcp = document["results"].get("dlcp")
            if not dlcp or "error" in dlcp or not reference or "error" in reference:
                sys.exit(f"{path}: dlcp missing or failed")
            mean, p99 = dlcp["iteration_ms"]["mean"], dlcp["gradient_fct_us"]["p99"]
            cells = [
                setting["collective"],
                str(setting["hosts"]),
                str(setting["seed"]),
                ", ".join(f"`{name}`" for name in off) or "none",
                ms(mean) if not off else
                f"{ms(mean)} ({change(mean, reference['iteration_ms']['mean'])})",
                us(p99) if not off else
                f"{us(p99)} ({change(p99, reference['gradient_fct_us']['p99'])})",
                us(dlcp["background_fct_us"].get("p99")),
                f"{dlcp['switch']['dropped_drop_eligible']:,}",
                f"{dlcp['switch']['ce_marked']:,}",
                f"{dlcp['dlcp']['retransmitted_packets']:,}",
            ]
            if dctcp:
                speedup, lower = versus_dctcp(dlcp, dctcp)
                cells += [f"{speedup:.2f}x", f"{lower:.1f}%"]
            else:
                cells += ["-", "-"]
            order = (setting["collective"], setting["hosts"], setting["seed"], len(off), off)
            rows.append((order, cells))
    return ["| " + " | ".join(cells) + " |" for _, cells in sorted(rows)]


VARIANT_KEYS = {"loss_budget", "dlcp_parity_members"}


def loss_pattern(link):
    """The long link's losses as the docs write them: 1% in bursts of 4, 0.5% random."""
    parts = []
    if link["burst_loss"] > 0:
        parts.append(f"{100 * link['burst_loss']:g}% in bursts of {link['burst_length']:g}")
    if link["random_loss"] > 0:
        parts.append(f"{100 * link['random_loss']:g}% random")
    return ", ".join(parts) or "none"


def share(without, with_):
    """A mechanism's share: the time without it over the time with it (above 1: it helps)."""
    return f"{without / with_:.2f}x"


def long_link_rows(documents):
    """Groups two-site documents by setting (their configuration but the budget and parity); per
    setting, the document with the default budget and no parity gives dlcp and DCTCP, the one with
    budget 0 the budget's share, and the one with parity the parity's share (p50 / p99 of the
    iteration time). Rows sort by hosts, collective, round trip, loss and seed."""
    groups = {}
    for path, document in documents:
        config = document["config"]
        if "long_link" not in config:
            sys.exit(f"{path}: not a two-site document (no long_link in its config)")
        setting = {k: v for k, v in config.items() if k not in VARIANT_KEYS}
        if config.get("dlcp_parity_members", 0) > 0:
            variant = "parity"
        elif config["loss_budget"] == 0:
            variant = "no_budget"
        else:
            variant = "base"
        by_variant = groups.setdefault(json.dumps(setting, sort_keys=True), {})
        if variant in by_variant:
            sys.exit(f"{path}: a second `{variant}` document for one setting")
        by_variant[variant] = (path, document)
    rows = []
    for key, by_variant in groups.items():
        setting = json.loads(key)
        if "base" not in by_variant:
            sys.exit(f"{next(iter(by_variant.values()))[0]}: no document with the default budget "
                     "and no parity for its setting")
        results = by_variant["base"][1]["results"]
        dlcp, dctcp = results.get("dlcp"), results.get("dctcp")
        if not dlcp or "error" in dlcp:
            sys.exit(f"{by_variant['base'][0]}: dlcp missing or failed")

        def iteration(result):
            return result["iteration_ms"]["p50"], result["iteration_ms"]["p99"]

        def variant_share(name):
            if name not in by_variant:
                return "-"
            other = by_variant[name][1]["results"]["dlcp"]
            (p50, p99), (other_p50, other_p99) = iteration(dlcp), iteration(other)
            if name == "no_budget":
                return f"{share(other_p50, p50)} / {share(other_p99, p99)}"
            return f"{share(p50, other_p50)} / {share(p99, other_p99)}"

        link = setting["long_link"]
        cells = [
            str(setting["hosts"]),
            "ps" if setting["collective"] == "parameter_server" else "ring",
            f"{link['rtt_ms']:g}",
            loss_pattern(link),
            str(setting["seed"]),
            "{} / {}".format(*map(ms, iteration(dlcp))),
            "{} / {}".format(*map(ms, iteration(dctcp))) if dctcp else "-",
            us(dlcp["gradient_fct_us"]["p99"]),
            us(dctcp["gradient_fct_us"]["p99"]) if dctcp else "-",
            f"{dlcp['dlcp']['missing_reports']:,}",
            f"{versus_dctcp(dlcp, dctcp)[0]:.2f}x" if dctcp else "-",
            variant_share("no_budget"),
            variant_share("parity"),
            " / ".join(f"{r['wall_s']:.0f}" for r in (dlcp, dctcp) if r),
        ]
        order = (setting["hosts"], setting["collective"], link["rtt_ms"], cells[3],
                 setting["seed"])
        rows.append((order, cells))
    return ["| " + " | ".join(cells) + " |" for _, cells in sorted(rows)]


LONG_LINK_HEADER = [
    "hosts",
    "collective",
    "round trip (ms)",
    "long link's loss",
    "seed",
    "dlcp iteration p50 / p99 (ms)",
    "DCTCP iteration p50 / p99 (ms)",
    "dlcp p99 gradient FCT (us)",
    "DCTCP p99 gradient FCT (us)",
    "dlcp recovery rounds",
    "dlcp vs DCTCP (mean iteration)",
    "budget's share p50 / p99",
    "parity's share p50 / p99",
    "wall (s): dlcp / DCTCP",
]
SUMMARY_HEADER = [
    "document",
    "dlcp iteration (ms) / p99 FCT (us)",
    "dlcp packets re-sent",
    "dlcp packets dropped (refused or full port)",
] + [f"{NAMES[s]}: iteration / p99, speed-up, p99 lower" for s in BASELINES]
TIMERS_HEADER = [
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
ABLATIONS_HEADER = [
    "collective",
    "hosts",
    "seed",
    "turned off (`--ablate`) or changed",
    "dlcp iteration mean (ms)",
    "dlcp p99 gradient FCT (us)",
    "background p99 FCT (us)",
    "drop-eligible refused",
    "CE marks",
    "dlcp packets re-sent",
    "speed-up vs DCTCP",
    "p99 gradient FCT lower than DCTCP's",
]
SCALE_HEADER = (
    ["hosts"]
    + [f"speed-up vs {NAMES[s]}" for s in BASELINES]
    + [f"p99 gradient FCT lower vs {NAMES[s]}" for s in BASELINES]
)


def print_table(header, rows):
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print(row)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--summary", action="store_true")
    mode.add_argument("--scale", action="store_true")
    mode.add_argument("--timers", action="store_true")
    mode.add_argument("--ablations", action="store_true")
    mode.add_argument("--long-link", action="store_true")
    parser.add_argument("files", nargs="+")
    args = parser.parse_args()
    documents = [(path, load(path)) for path in args.files]
    if args.summary:
        print_table(SUMMARY_HEADER, [summary_row(path, d) for path, d in documents])
    elif args.timers:
        print_table(TIMERS_HEADER, timer_rows(documents))
    elif args.ablations:
        print_table(ABLATIONS_HEADER, ablation_rows(documents))
    elif args.long_link:
        print_table(LONG_LINK_HEADER, long_link_rows(documents))
    elif args.scale:
        print_table(SCALE_HEADER, [scale_row(d) for _, d in documents])
    else:
        for path, document in documents:
            print(f"{path}: {document.get('description', '')}\n")
            print(results_table(document))
            counters = dlcp_counters(document)
            if counters:
                print("\n" + counters)
            print()


if __name__ == "__main__":
    # Piped into head, stop quietly as other command-line tools do, not with a traceback.
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    main()
