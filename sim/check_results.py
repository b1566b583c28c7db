#!/usr/bin/env python3
"""Runs a dlcp-sim scenario and checks its JSON summary (the CTest test sim.small).

Usage: check_results.py PATH/TO/dlcp-sim [dlcp-sim arguments...]
Checks: the last output line is JSON; every scheme finished every iteration; iteration times
and flow completion times are finite numbers; TCP's loss counters cover every TCP flow; the
switches saw dlcp's packets in its priority bands and DCTCP's in best effort only; dlcp's p99
gradient FCT is below DCTCP's; the configuration records the drop-eligible threshold (per
queue by default). Then re-runs dlcp alone with --merge of that document: the
baselines must be kept as they were and dlcp's result must repeat exactly (same seed,
deterministic simulator), also when it writes its flow file (--flows), whose flows must give
the summary's counts and p99s. Two documents that each lack a scheme, gathered with
--schemes none, must give the full document back; two that disagree on a result must be
refused. A merge with another configuration must be refused before anything runs, as must
settings that cannot be simulated. The first run writes progress lines for every scheme; the
merge's re-run of dlcp writes none and must still repeat it exactly. A one-iteration run with
largest-first or sharded slicing must leave the busiest server within 1% of the mean intake,
and no further from it than layer order does; sharded must send the largest layer to every
server. With compute jitter X, the workers' first pushes must leave within [1 - X, 1 + X] of
the lockstep run's instant, and not all together.
Last, dlcp runs alone with a gray spine (--gray-loss): the spine must drop its share of packets
(within 6 binomial standard deviations), and dlcp must still finish every iteration and every
gradient message with no more entries missing than its loss budget allows. With
--dlcp-pacing shared-band dlcp must still finish everything, record the option, react to marks
in the background's band with its shared-band pacers, and so send differently from the default.
With --tcp-connections persistent, DCTCP and pFabric must finish everything over one kept
connection per directed (worker, server) pair, and dlcp must repeat its default result exactly.
"""

import json
import math
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import flows  # noqa: E402  (sim/flows.py, beside this script)


def fail(message):
    print("check_results: FAIL: " + message)
    sys.exit(1)


def finite(value):
    return isinstance(value, (int, float)) and math.isfinite(value)


def run_summary(command, progress=None):
    """The run's JSON summary. With `progress` (a list), its progress lines are added to it."""
    run = subprocess.run(command, stdout=subprocess.PIPE, text=True,
                         stderr=subprocess.PIPE if progress is not None else None)
    print(run.stdout)
    if progress is not None:
        progress.extend(line for line in run.stderr.splitlines() if "ms simulated after" in line)
        print(f"{len(progress)} progress lines on stderr")
    if run.returncode != 0:
        fail(f"dlcp-sim exited with {run.returncode}: {run.stderr or ''}")
    lines = [line for line in run.stdout.splitlines() if line.strip()]
    try:
        return json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError) as error:
        fail(f"the last output line is not JSON: {error}")


def check_progress(progress, summary):
    """Every scheme's run wrote progress lines (the merge re-runs dlcp without them and must
    repeat its result exactly, event count included)."""
    for scheme in summary["results"]:
        if not any(f" {summary['scenario']} {scheme}: " in line for line in progress):
            fail(f"no progress line for {scheme} on stderr")


def without_timing(result):
    return {key: value for key, value in result.items() if key != "wall_s"}


def check_merge(command, out_dir, summary):
    stored = f"{out_dir}/{summary['scenario']}.json"
    refused = subprocess.run(command + ["--schemes", "dlcp", "--seed", "77", "--merge", stored],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if refused.returncode != 2 or "seed" not in refused.stderr:
        fail(f"a merge across seeds was not refused by name (exit {refused.returncode}, "
             f"stderr {refused.stderr!r})")
    # With --flows, which must not change the result either, and without progress lines.
    merged = run_summary(command + ["--schemes", "dlcp", "--merge", stored, "--flows",
                                    "--progress-s", "0"])
    if list(merged["results"]) != list(summary["results"]):
        fail(f"merged schemes {list(merged['results'])} != {list(summary['results'])}")
    for scheme, result in summary["results"].items():
        if without_timing(merged["results"][scheme]) != without_timing(result):
            fail(f"{scheme} differs after the merge (dlcp re-run, the others kept)")
    if merged["versus"] != summary["versus"]:
        fail("the comparison against the baselines changed after the merge")
    flow_file = f"{out_dir}/{summary['scenario']}-dlcp-flows.csv"
    check_flow_file(flow_file, merged["results"]["dlcp"])
    return flow_file


def check_gathering(command, out_dir, summary):
    """`--schemes none` with two --merge documents gathers their schemes without running any:
    the document must equal the full run's; two documents that disagree on a scheme's result
    (its run time aside) are refused, naming the scheme."""
    def write(name, drop, change=None):
        document = json.loads(json.dumps(summary))
        del document["results"][drop]
        if change:
            change(document["results"]["dlcp"])
        path = f"{out_dir}/gather/{name}.json"
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            json.dump(document, f)
        return path

    first = write("first", "pias")
    second = write("second", "pfabric", lambda dlcp: dlcp.update(wall_s=dlcp["wall_s"] + 1))
    gathered = run_summary(command + ["--schemes", "none", "--merge", first, "--merge", second,
                                      "--out", f"{out_dir}/gather"])
    if gathered["results"] != summary["results"] or gathered["versus"] != summary["versus"]:
        fail("gathering two documents with --schemes none did not give the full run's results")
    other = write("other", "pfabric", lambda dlcp: dlcp["gradient_fct_us"].update(p99=1e9))
    refused = subprocess.run(command + ["--schemes", "none", "--merge", first, "--merge", other],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if refused.returncode != 2 or "for dlcp" not in refused.stderr:
        fail(f"two documents with different dlcp results were gathered (exit "
             f"{refused.returncode}, stderr {refused.stderr!r})")


def imbalance(flow_file):
    """The most loaded server's intake over the mean, from a flow file."""
    loads, _ = flows.server_loads(flows.read(flow_file))
    return max(loads.values()) / (sum(loads.values()) / len(loads))


def check_slicing(command, out_dir, layer_order_flows):
    """Largest-first and sharded slicing balance the servers at least as well as layer order,
    within 1%; sharded sends a piece of the largest layer to every server."""
    layer_order = imbalance(layer_order_flows)
    for slicing in ("largest-first", "sharded"):
        run_summary(command + ["--schemes", "dlcp", "--iterations", "1", "--slicing", slicing,
                               "--flows", "--out", f"{out_dir}/{slicing}"])
        flow_file = f"{out_dir}/{slicing}/{os.path.basename(layer_order_flows)}"
        balanced = imbalance(flow_file)
        if not (balanced <= layer_order and balanced < 1.01):
            fail(f"{slicing} slicing loads the busiest server {balanced:.3f}x the mean, "
                 f"layer order {layer_order:.3f}x")
        print(f"check_results: the busiest server takes in {balanced:.3f}x the mean with "
              f"{slicing} slicing, {layer_order:.3f}x in layer order")
    sharded = f"{out_dir}/sharded/{os.path.basename(layer_order_flows)}"
    pushes = [f for f in flows.read(sharded) if f["phase"] == "push"]
    largest = max(pushes, key=lambda f: f["bytes"])
    servers = {f["dst"] for f in pushes}
    reached = {f["dst"] for f in pushes if f["src"] == largest["src"] and
               f["layer"] == largest["layer"]}
    if reached != servers:
        fail(f"sharded slicing sent layer {largest['layer']} of worker {largest['src']} to "
             f"servers {sorted(reached)}, not to all of {sorted(servers)}")


def first_pushes(flow_file):
    """When each worker first pushed the last layer (the first one backward produces)."""
    pushes = [f for f in flows.read(flow_file) if f["phase"] == "push"]
    last_layer = max(f["layer"] for f in pushes)
    first = {}
    for f in pushes:
        if f["layer"] == last_layer:
            first[f["src"]] = min(first.get(f["src"], f["posted"]), f["posted"])
    return first


def check_jitter(command, out_dir, lockstep_flows):
    """--compute-jitter X scales each worker's first forward and backward by a factor in
    [1 - X, 1 + X]: its first push leaves within that factor of the lockstep instant."""
    spread = 0.1
    run_summary(command + ["--schemes", "dlcp", "--iterations", "1", "--compute-jitter",
                           str(spread), "--flows", "--out", f"{out_dir}/jitter"])
    lockstep = first_pushes(lockstep_flows)
    jittered = first_pushes(f"{out_dir}/jitter/{os.path.basename(lockstep_flows)}")
    instants = set(lockstep.values())
    if len(instants) != 1 or set(jittered) != set(lockstep):
        fail(f"first pushes: lockstep at {sorted(instants)}, jittered workers "
             f"{sorted(jittered)} against {sorted(lockstep)}")
    (instant,) = instants
    # Each layer's time is rounded to the nanosecond on its own: allow 0.1 us.
    low, high = (1 - spread) * instant - 0.1, (1 + spread) * instant + 0.1
    factors = sorted(t / instant for t in jittered.values())
    if not all(low <= t <= high for t in jittered.values()):
        fail(f"first pushes at {factors[0]:.3f}-{factors[-1]:.3f}x the lockstep instant, "
             f"outside 1 +- {spread}")
    if factors[-1] - factors[0] < spread:
        fail(f"first pushes at {factors[0]:.3f}-{factors[-1]:.3f}x the lockstep instant: "
             f"a jitter of {spread} hardly spread them")
    print(f"check_results: with --compute-jitter {spread} the first pushes leave at "
          f"{factors[0]:.3f}-{factors[-1]:.3f}x the lockstep instant ({instant:.1f} us)")


def check_flow_file(path, result):
    """--flows wrote every finished flow, and its times give the summary's statistics."""
    if not os.path.exists(path):
        fail(f"--flows wrote no flow file {path}")
    by_kind = {kind: flows.read(path, kind) for kind in ("gradient", "background")}
    for kind, kept in by_kind.items():
        fcts = sorted(f["fct"] for f in kept)
        if len(fcts) != result[f"{kind}_fct_us"]["count"]:
            fail(f"{path}: {len(fcts)} {kind} flows, the summary counts "
                 f"{result[kind + '_fct_us']['count']}")
        p99 = flows.percentile(fcts, 99) if fcts else None
        if fcts and not math.isclose(p99, result[f"{kind}_fct_us"]["p99"], rel_tol=1e-4,
                                     abs_tol=0.01):
            fail(f"{path}: {kind} p99 {p99} us, the summary says "
                 f"{result[kind + '_fct_us']['p99']} us")
    gradient = by_kind["gradient"]
    phases = {f["phase"] for f in gradient}
    pushes = sum(f["phase"] == "push" for f in gradient)
    if phases != {"push", "pull"} or 2 * pushes != result["gradient_fct_us"]["count"]:
        fail(f"{path}: parameter-server phases {sorted(phases)} with {pushes} pushes of "
             f"{result['gradient_fct_us']['count']} gradient flows")


def check_refusals(command):
    """Settings that cannot be simulated are refused by name before anything runs."""
    for bad, named in ((["--load", "2"], "--load"), (["--buffer-kib", "50"], "--buffer-kib"),
                       (["--background", "enterprise"], "--background"),
                       (["--gray-loss", "1"], "--gray-loss"), (["--ablate", "pacing"], "--ablate"),
                       (["--tcp-min-rto-us", "0"], "--tcp-min-rto-us"),
                       (["--servers", "0"], "--servers"), (["--servers", "16"], "--servers"),
                       (["--servers", "2.5"], "--servers"),
                       (["--collective", "ring", "--servers", "4"], "--servers"),
                       (["--slicing", "random"], "--slicing"),
                       (["--compute-jitter", "1"], "--compute-jitter"),
                       (["--pfabric-rto", "sometimes"], "--pfabric-rto"),
                       (["--tcp-close", "linux"], "--tcp-close"),
                       (["--tcp-connections", "pooled"], "--tcp-connections"),
                       (["--eligible-threshold", "class"], "--eligible-threshold"),
                       (["--dlcp-pacing", "class"], "--dlcp-pacing"),
                       (["--collective", "ring", "--slicing", "largest-first"], "--slicing"),
                       (["--schemes", "none"], "--merge"), (["--schemes", ""], "--schemes"),
                       (["--jobs", "0"], "--jobs"), (["--progress-s", "-1"], "--progress-s"),
                       (["--out", "/dev/null/results"], "--out")):
        refused = subprocess.run(command + bad, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True, timeout=60)
        if refused.returncode != 2 or named not in refused.stderr:
            fail(f"{' '.join(bad)} was not refused by name (exit {refused.returncode}, "
                 f"stderr {refused.stderr!r})")


def main():
    if len(sys.argv) < 2:
        fail("usage: check_results.py DLCP_SIM [arguments...]")
    with tempfile.TemporaryDirectory() as out_dir:
        command = sys.argv[1:] + ["--json", "--out", out_dir, "--jobs", "2"]
        check_refusals(command)
        progress = []
        summary = run_summary(command + ["--progress-s", "0.2"], progress)
        check_results(summary)
        check_progress(progress, summary)
        layer_order_flows = check_merge(command, out_dir, summary)
        check_gathering(command, out_dir, summary)
        check_slicing(command, out_dir, layer_order_flows)
        check_jitter(command, out_dir, layer_order_flows)
        check_gray_spine(command)
        check_probe_mode(command, summary)
        check_shared_band_pacing(command, summary)
        check_kept_connections(command, summary)
    print("check_results: OK (merge kept the baselines and repeated dlcp exactly; bad settings "
          "refused; dlcp recovered from the gray spine within its budget; pFabric probed)")


GRAY_LOSS = 0.05


def check_gray_spine(command):
    """dlcp alone over a spine that drops GRAY_LOSS of what it forwards."""
    summary = run_summary(command + ["--schemes", "dlcp", "--gray-loss", str(GRAY_LOSS)])
    result = summary["results"]["dlcp"]
    check_scheme("dlcp", result)
    seen, dropped = result["switch"]["gray_seen"], result["switch"]["gray_dropped"]
    if seen < 1000:
        fail(f"only {seen} packets crossed the gray spine: too few to check its loss rate")
    expected = GRAY_LOSS * seen
    sigma = math.sqrt(seen * GRAY_LOSS * (1 - GRAY_LOSS))
    if abs(dropped - expected) > 6 * sigma:
        fail(f"the gray spine dropped {dropped} of {seen} packets; {GRAY_LOSS:.0%} would be "
             f"{expected:.0f} +- {6 * sigma:.0f}")
    missing = result["dlcp"]["entries_missing_share"]
    budget = summary["config"]["loss_budget"]
    if not 0 <= missing <= budget:
        fail(f"dlcp settled with {missing:.4%} of entries missing, above its {budget:.2%} budget")
    if result["dlcp"]["retransmitted_packets"] == 0:
        fail("dlcp lost packets to the gray spine but retransmitted none")
    print(f"check_results: gray spine OK ({dropped} of {seen} packets dropped; dlcp finished "
          f"with {missing:.4%} of entries missing)")


def check_probe_mode(command, default_summary):
    """pFabric with `--pfabric-rto probe` finishes every flow and sends one-byte probes; with
    `--tcp-close rfc793` as well, which the document must record (the default's must not)."""
    summary = run_summary(command + ["--schemes", "pfabric", "--pfabric-rto", "probe",
                                     "--tcp-close", "rfc793", "--iterations", "1"])
    if summary["config"].get("pfabric_rto") != "probe":
        fail(f"the document does not record pFabric's timer: {summary['config']}")
    if summary["config"].get("tcp_close") != "rfc793":
        fail(f"the document does not record TCP's close: {summary['config']}")
    if "tcp_close" in default_summary["config"]:
        fail(f"the default run records a TCP close option: {default_summary['config']}")
    result = summary["results"]["pfabric"]
    check_scheme("pfabric", result)
    check_tcp_counters("pfabric", result, probing=True)
    probes = result["tcp"]["gradient"]["probes"]
    if probes == 0:
        fail(f"pFabric sent no probes after {result['tcp']['gradient']['timeouts']} timeouts")
    print(f"check_results: pFabric's probe mode OK ({probes} gradient probes, every flow done)")


def check_shared_band_pacing(command, summary):
    """dlcp with `--dlcp-pacing shared-band`: marks in the band the background shares cut only
    the pacers of dlcp's packets in that band. The background marks that band in every run of
    this scenario, so the shared-band pacers must react, and dlcp's sends must change."""
    paced = run_summary(command + ["--schemes", "dlcp", "--dlcp-pacing", "shared-band"])
    if paced["config"].get("dlcp_pacing") != "shared_band":
        fail(f"the document does not record dlcp's pacing: {paced['config']}")
    if "dlcp_pacing" in summary["config"]:
        fail(f"the default run records a pacing option: {summary['config']}")
    result = paced["results"]["dlcp"]
    check_scheme("dlcp", result)
    marks = result["dlcp"].get("shared_band_marks", 0)
    if marks == 0:
        fail(f"no mark in the background's band reached a shared-band pacer ({result['dlcp']})")
    if "shared_band_marks" in summary["results"]["dlcp"]["dlcp"]:
        fail("the default run reports shared-band marks")
    default = summary["results"]["dlcp"]
    if result["events"] == default["events"] and result["switch"] == default["switch"]:
        fail("dlcp sent exactly as by default although its shared-band pacers reacted to marks")
    print(f"check_results: shared-band pacing OK ({marks} marks in the background's band cut "
          f"only their own pacers; iteration {result['iteration_ms']['mean']:.3f} ms against "
          f"{default['iteration_ms']['mean']:.3f} by default)")


def check_kept_connections(command, summary):
    """`--tcp-connections persistent`: the TCP baselines carry their gradient messages over one
    kept connection per (worker, server) pair and direction, the background still over a
    connection per flow; dlcp, whose gradients never take TCP, repeats its default result."""
    kept = run_summary(command + ["--schemes", "dlcp,dctcp,pfabric", "--tcp-connections",
                                  "persistent"])
    if kept["config"].get("tcp_connections") != "persistent":
        fail(f"the document does not record the kept connections: {kept['config']}")
    if "tcp_connections" in summary["config"]:
        fail(f"the default run records a connections option: {summary['config']}")
    if without_timing(kept["results"]["dlcp"]) != without_timing(summary["results"]["dlcp"]):
        fail("dlcp's result changed with the TCP baselines' kept connections")
    servers = kept["config"]["servers"]
    pairs = 2 * servers * (kept["config"]["hosts"] - servers)
    for scheme in ("dctcp", "pfabric"):
        result = kept["results"][scheme]
        check_scheme(scheme, result)
        gradient, background = result["tcp"]["gradient"], result["tcp"]["background"]
        messages = result["gradient_fct_us"]["started"]
        if gradient["connections"] != pairs or not pairs < messages:
            fail(f"{scheme}: {gradient['connections']} kept gradient connections for {pairs} "
                 f"directed pairs and {messages} messages")
        if background["connections"] != result["background_fct_us"]["started"]:
            fail(f"{scheme}: {background['connections']} background connections for "
                 f"{result['background_fct_us']['started']} background flows")
    print(f"check_results: kept connections OK ({pairs} per TCP baseline for "
          f"{kept['results']['dctcp']['gradient_fct_us']['started']} gradient messages; DCTCP's "
          f"iteration {kept['results']['dctcp']['iteration_ms']['mean']:.3f} ms against "
          f"{summary['results']['dctcp']['iteration_ms']['mean']:.3f} with a connection each)")


def check_bands(results):
    """The switches must see dlcp's DSCPs: control in band 0 and its classes in their own bands.
    (ns-3.37's UDP SendTo once sent every dlcp packet with TOS 0, into the best-effort band.)"""
    bands = results["dlcp"]["switch"]["enqueued_by_band"]
    used = [band for band in range(7) if bands[band] > 0]
    if len(used) < 6:
        fail(f"dlcp's packets reached only bands {used} of 0-6 at the switches: {bands}")
    if any(results["dctcp"]["switch"]["enqueued_by_band"][:7]):
        fail(f"DCTCP's packets reached bands other than best effort: "
             f"{results['dctcp']['switch']['enqueued_by_band']}")


def check_scheme(scheme, result):
    if "error" in result:
        fail(f"{scheme}: {result['error']}")
    if result["iterations_finished"] != result["iterations_expected"]:
        fail(f"{scheme}: finished {result['iterations_finished']} of "
             f"{result['iterations_expected']} iterations")
    for group in ("iteration_ms", "gradient_fct_us"):
        for key in ("mean", "p99"):
            if not finite(result[group][key]) or result[group][key] <= 0:
                fail(f"{scheme}: {group}.{key} = {result[group][key]}")
    if result["gradient_fct_us"]["count"] != result["gradient_fct_us"]["started"]:
        fail(f"{scheme}: not every gradient flow completed")


def check_tcp_counters(scheme, result, probing=False):
    """Every TCP flow is counted once, from its first SYN; dlcp sends no gradient over TCP; only
    pFabric's probe mode (`probing`) sends probes."""
    for kind in ("gradient", "background"):
        counters = result["tcp"][kind]
        if not probing and counters["probes"] != 0:
            fail(f"{scheme}: {counters['probes']} {kind} probes sent outside probe mode")
        flows = result[f"{kind}_fct_us"]["started"]
        expected = 0 if (scheme == "dlcp" and kind == "gradient") else flows
        if counters["connections"] != expected:
            fail(f"{scheme}: {counters['connections']} {kind} TCP connections counted for "
                 f"{expected} flows")
        if any(not isinstance(value, int) or value < 0 for value in counters.values()):
            fail(f"{scheme}: {kind} TCP counters {counters}")


def check_results(summary):
    # The default threshold must be the library's switch plan's (drop-eligible packets refused on
    # their own class's queue), and the document must say which one it used.
    if summary["config"].get("eligible_threshold") != "queue":
        fail(f"the document does not record the per-queue threshold: {summary['config']}")
    results = summary["results"]
    for scheme, result in results.items():
        check_scheme(scheme, result)
        check_tcp_counters(scheme, result)
        if result["switch"]["gray_seen"] or result["switch"]["gray_dropped"]:
            fail(f"{scheme}: a healthy fabric reports gray-spine traffic {result['switch']}")

    for needed in ("dlcp", "dctcp"):
        if needed not in results:
            fail(f"scheme {needed} missing from the results")
    check_bands(results)
    ours = results["dlcp"]["gradient_fct_us"]["p99"]
    theirs = results["dctcp"]["gradient_fct_us"]["p99"]
    if not ours < theirs:
        fail(f"dlcp's p99 gradient FCT {ours} us is not below DCTCP's {theirs} us")
    for baseline, versus in summary["versus"].items():
        if not finite(versus["training_speedup"]):
            fail(f"training speed-up against {baseline} is {versus['training_speedup']}")
    print(f"check_results: OK ({len(results)} schemes; dlcp p99 gradient FCT {ours:.1f} us vs "
          f"DCTCP {theirs:.1f} us)")


if __name__ == "__main__":
    main()
