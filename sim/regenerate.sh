#!/usr/bin/env bash
# Regenerates every variant document docs/simulation.md has used, those still in
# sim/results/variants/ and those deleted from it: one dlcp-sim command per document.
#
#   sim/regenerate.sh DLCP_SIM OUT_DIR [PATTERN]
#
# DLCP_SIM is the simulator binary (build-sim/sim/dlcp-sim). Each document is written to
# OUT_DIR/NAME.json, the name it had (or has) in sim/results/variants/, and its printed table to
# OUT_DIR/logs/NAME.txt. PATTERN, a shell glob, runs only the variants whose NAME matches it
# (default: all). A document already in OUT_DIR is skipped, so an interrupted run resumes.
# JOBS (default 1) is passed to --jobs: how many of a document's schemes run at once.
#
# The commands come from each stored document's configuration: its scenario, the schemes it holds
# and the options that differ from the scenario's defaults. Many were first made in several runs
# and merged (--merge); the simulator is deterministic and runs each scheme in a process of its
# own, so one run gives the same document. The stored documents are model revision 9: the current
# simulator writes revision 12 (the library's shorter pacer burst, then the library's protocol
# core, then its whole protocol endpoint), so dlcp's figures will differ from them
# (docs/simulation.md, "Stored results"); the baselines' should not.
#
# Time: 16 and 48 hosts take seconds to minutes a document; 144 hosts from minutes (dlcp alone) to
# hours (pFabric, PIAS and NewReno in ring all-reduce, 1-3 hours each).
set -euo pipefail

if [[ $# -lt 2 || $# -gt 3 ]]; then
  echo "usage: $0 DLCP_SIM OUT_DIR [PATTERN]" >&2
  exit 2
fi
sim=$1
out=$2
pattern=${3:-*}
jobs=${JOBS:-1}
[[ -x $sim ]] || { echo "$0: $sim is not an executable" >&2; exit 2; }
mkdir -p "$out/logs"

# variant NAME DLCP-SIM-OPTIONS...: runs dlcp-sim with the options and keeps its document as NAME.
variant() {
  local name=$1
  shift
  # shellcheck disable=SC2053  # PATTERN is a glob on purpose
  [[ $name == $pattern ]] || return 0
  if [[ -e $out/$name.json ]]; then
    echo "$name: already there" >&2
    return 0
  fi
  local work=$out/.work/$name
  rm -rf "$work"
  mkdir -p "$work"
  echo "$name: dlcp-sim $*" >&2
  "$sim" "$@" --jobs "$jobs" --out "$work" >"$out/logs/$name.txt"
  local documents=("$work"/*.json)
  mv "${documents[0]}" "$out/$name.json"
  rm -rf "$work"
}

# Seeds 2 and 3 of the stored scenarios (parameter server, all five schemes).
variant scale-16-seed2 --scenario scale-16 --seed 2
variant scale-16-seed3 --scenario scale-16 --seed 3
variant scale-48-seed2 --scenario scale-48 --seed 2
variant scale-48-seed3 --scenario scale-48 --seed 3
variant paper-144-seed2 --scenario paper-144 --seed 2
variant paper-144-seed3 --scenario paper-144 --seed 3

# One setting changed at 16 hosts: background sizes, load, buffer.
variant scale-16-buffer200k --scenario scale-16 --buffer-kib 200
variant scale-16-data-mining --scenario scale-16 --background data-mining
variant scale-16-load60 --scenario scale-16 --load 0.6

# Gray failure: spine 0 drops 1% of what it forwards.
variant scale-16-gray1 --scenario scale-16 --gray-loss 0.01
variant scale-48-gray1 --scenario scale-48 --gray-loss 0.01
variant paper-144-gray1 --scenario paper-144 --gray-loss 0.01

# Ring all-reduce at 2% size, seeds 1-3 (paper-144-ring-iterations1: all five schemes, one
# iteration).
variant scale-16-ring --scenario scale-16 --collective ring
variant scale-16-ring-seed2 --scenario scale-16 --schemes dlcp,dctcp --collective ring --seed 2
variant scale-16-ring-seed3 --scenario scale-16 --schemes dlcp,dctcp --collective ring --seed 3
variant scale-48-ring --scenario scale-48 --collective ring
variant scale-48-ring-seed2 --scenario scale-48 --collective ring --seed 2
variant scale-48-ring-seed3 --scenario scale-48 --collective ring --seed 3
variant paper-144-ring --scenario paper-144 --schemes dlcp,dctcp,newreno,pfabric --collective ring
variant paper-144-ring-iterations1 --scenario paper-144 --collective ring --iterations 1
variant paper-144-ring-seed2 --scenario paper-144 --schemes dlcp,dctcp,newreno,pfabric --collective ring --seed 2
variant paper-144-ring-seed3 --scenario paper-144 --schemes dlcp,dctcp,newreno,pfabric --collective ring --seed 3

# Kept connections: the TCP baselines keep one connection per pair of hosts.
variant scale-16-kept-connections --scenario scale-16 --tcp-connections persistent
variant scale-16-kept-connections-seed2 --scenario scale-16 --seed 2 --tcp-connections persistent
variant scale-16-kept-connections-seed3 --scenario scale-16 --seed 3 --tcp-connections persistent
variant scale-16-ring-kept-connections --scenario scale-16 --collective ring --tcp-connections persistent
variant scale-48-kept-connections --scenario scale-48 --tcp-connections persistent
variant scale-48-ring-kept-connections --scenario scale-48 --collective ring --tcp-connections persistent
variant paper-144-kept-connections --scenario paper-144 --tcp-connections persistent
variant paper-144-kept-connections-pfabric-fixed-rto --scenario paper-144 --schemes dlcp,pfabric --pfabric-rto fixed --tcp-connections persistent
variant paper-144-kept-connections-seed2 --scenario paper-144 --seed 2 --tcp-connections persistent
variant paper-144-kept-connections-seed3 --scenario paper-144 --seed 3 --tcp-connections persistent
variant paper-144-ring-kept-connections --scenario paper-144 --collective ring --tcp-connections persistent

# TCP's minimum RTO (DCTCP, NewReno, PIAS and the background), with a connection per message and
# kept.
variant scale-16-rto100us --scenario scale-16 --schemes dlcp,dctcp --tcp-min-rto-us 100
variant scale-16-rto1ms --scenario scale-16 --schemes dlcp,dctcp --tcp-min-rto-us 1000
variant scale-16-rto2ms --scenario scale-16 --schemes dlcp,dctcp --tcp-min-rto-us 2000
variant scale-16-rto4ms --scenario scale-16 --schemes dlcp,dctcp --tcp-min-rto-us 4000
variant scale-16-rto4ms-kept-connections --scenario scale-16 --schemes dlcp,dctcp --tcp-min-rto-us 4000 --tcp-connections persistent
variant scale-16-rto500us --scenario scale-16 --schemes dlcp,dctcp --tcp-min-rto-us 500
variant scale-16-rto5ms --scenario scale-16 --schemes dlcp,dctcp --tcp-min-rto-us 5000
variant scale-48-rto4ms --scenario scale-48 --schemes dlcp,dctcp --tcp-min-rto-us 4000
variant scale-48-rto4ms-kept-connections --scenario scale-48 --schemes dlcp,dctcp --tcp-min-rto-us 4000 --tcp-connections persistent
variant scale-48-rto4ms-seed2 --scenario scale-48 --schemes dlcp,dctcp --seed 2 --tcp-min-rto-us 4000
variant scale-48-rto4ms-seed3 --scenario scale-48 --schemes dlcp,dctcp --seed 3 --tcp-min-rto-us 4000
variant paper-144-rto1ms --scenario paper-144 --schemes dlcp,dctcp --tcp-min-rto-us 1000
variant paper-144-rto4ms --scenario paper-144 --schemes dlcp,dctcp --tcp-min-rto-us 4000
variant paper-144-rto4ms-kept-connections --scenario paper-144 --schemes dlcp,dctcp,newreno,pias --tcp-min-rto-us 4000 --tcp-connections persistent
variant paper-144-rto4ms-kept-connections-seed2 --scenario paper-144 --schemes dlcp,dctcp --seed 2 --tcp-min-rto-us 4000 --tcp-connections persistent
variant paper-144-rto4ms-kept-connections-seed3 --scenario paper-144 --schemes dlcp,dctcp --seed 3 --tcp-min-rto-us 4000 --tcp-connections persistent
variant paper-144-rto4ms-seed2 --scenario paper-144 --schemes dlcp,dctcp --seed 2 --tcp-min-rto-us 4000
variant paper-144-rto4ms-seed3 --scenario paper-144 --schemes dlcp,dctcp --seed 3 --tcp-min-rto-us 4000

# pFabric's own timers: fixed timeout, and probe mode, in lockstep and with 5% compute jitter.
variant scale-16-jitter5-pfabric-fixed-rto --scenario scale-16 --schemes dlcp,pfabric --compute-jitter 0.05 --pfabric-rto fixed
variant scale-16-jitter5-pfabric-probe --scenario scale-16 --schemes dlcp,pfabric --compute-jitter 0.05 --pfabric-rto probe
variant scale-16-jitter5-seed2-pfabric-fixed-rto --scenario scale-16 --schemes dlcp,pfabric --seed 2 --compute-jitter 0.05 --pfabric-rto fixed
variant scale-16-jitter5-seed2-pfabric-probe --scenario scale-16 --schemes dlcp,pfabric --seed 2 --compute-jitter 0.05 --pfabric-rto probe
variant scale-16-jitter5-seed3-pfabric-fixed-rto --scenario scale-16 --schemes dlcp,pfabric --seed 3 --compute-jitter 0.05 --pfabric-rto fixed
variant scale-16-jitter5-seed3-pfabric-probe --scenario scale-16 --schemes dlcp,pfabric --seed 3 --compute-jitter 0.05 --pfabric-rto probe
variant scale-16-pfabric-fixed-rto --scenario scale-16 --schemes dlcp,pfabric --pfabric-rto fixed
variant scale-16-pfabric-probe --scenario scale-16 --schemes dlcp,pfabric --pfabric-rto probe
variant scale-16-seed2-pfabric-fixed-rto --scenario scale-16 --schemes dlcp,pfabric --seed 2 --pfabric-rto fixed
variant scale-16-seed2-pfabric-probe --scenario scale-16 --schemes dlcp,pfabric --seed 2 --pfabric-rto probe
variant scale-16-seed3-pfabric-fixed-rto --scenario scale-16 --schemes dlcp,pfabric --seed 3 --pfabric-rto fixed
variant scale-16-seed3-pfabric-probe --scenario scale-16 --schemes dlcp,pfabric --seed 3 --pfabric-rto probe
variant scale-48-jitter5-pfabric-fixed-rto --scenario scale-48 --schemes dlcp,pfabric --compute-jitter 0.05 --pfabric-rto fixed
variant scale-48-jitter5-pfabric-probe --scenario scale-48 --schemes dlcp,pfabric --compute-jitter 0.05 --pfabric-rto probe
variant scale-48-jitter5-seed2-pfabric-fixed-rto --scenario scale-48 --schemes dlcp,pfabric --seed 2 --compute-jitter 0.05 --pfabric-rto fixed
variant scale-48-jitter5-seed2-pfabric-probe --scenario scale-48 --schemes dlcp,pfabric --seed 2 --compute-jitter 0.05 --pfabric-rto probe
variant scale-48-jitter5-seed3-pfabric-fixed-rto --scenario scale-48 --schemes dlcp,pfabric --seed 3 --compute-jitter 0.05 --pfabric-rto fixed
variant scale-48-jitter5-seed3-pfabric-probe --scenario scale-48 --schemes dlcp,pfabric --seed 3 --compute-jitter 0.05 --pfabric-rto probe
variant scale-48-pfabric-fixed-rto --scenario scale-48 --schemes dlcp,pfabric --pfabric-rto fixed
variant scale-48-pfabric-probe --scenario scale-48 --schemes dlcp,pfabric --pfabric-rto probe
variant scale-48-seed2-pfabric-fixed-rto --scenario scale-48 --schemes dlcp,pfabric --seed 2 --pfabric-rto fixed
variant scale-48-seed2-pfabric-probe --scenario scale-48 --schemes dlcp,pfabric --seed 2 --pfabric-rto probe
variant scale-48-seed3-pfabric-fixed-rto --scenario scale-48 --schemes dlcp,pfabric --seed 3 --pfabric-rto fixed
variant scale-48-seed3-pfabric-probe --scenario scale-48 --schemes dlcp,pfabric --seed 3 --pfabric-rto probe
variant paper-144-jitter5-pfabric-fixed-rto --scenario paper-144 --schemes dlcp,pfabric --compute-jitter 0.05 --pfabric-rto fixed
variant paper-144-jitter5-pfabric-probe --scenario paper-144 --schemes dlcp,pfabric --compute-jitter 0.05 --pfabric-rto probe
variant paper-144-jitter5-seed2-pfabric-fixed-rto --scenario paper-144 --schemes dlcp,pfabric --seed 2 --compute-jitter 0.05 --pfabric-rto fixed
variant paper-144-jitter5-seed2-pfabric-probe --scenario paper-144 --schemes dlcp,pfabric --seed 2 --compute-jitter 0.05 --pfabric-rto probe
variant paper-144-jitter5-seed3-pfabric-fixed-rto --scenario paper-144 --schemes dlcp,pfabric --seed 3 --compute-jitter 0.05 --pfabric-rto fixed
variant paper-144-jitter5-seed3-pfabric-probe --scenario paper-144 --schemes dlcp,pfabric --seed 3 --compute-jitter 0.05 --pfabric-rto probe
variant paper-144-pfabric-fixed-rto --scenario paper-144 --schemes dlcp,pfabric --pfabric-rto fixed
variant paper-144-pfabric-probe --scenario paper-144 --schemes dlcp,pfabric --pfabric-rto probe
variant paper-144-seed2-pfabric-fixed-rto --scenario paper-144 --schemes dlcp,pfabric --seed 2 --pfabric-rto fixed
variant paper-144-seed2-pfabric-probe --scenario paper-144 --schemes dlcp,pfabric --seed 2 --pfabric-rto probe
variant paper-144-seed3-pfabric-fixed-rto --scenario paper-144 --schemes dlcp,pfabric --seed 3 --pfabric-rto fixed
variant paper-144-seed3-pfabric-probe --scenario paper-144 --schemes dlcp,pfabric --seed 3 --pfabric-rto probe
variant paper-144-sharded-pfabric-fixed-rto --scenario paper-144 --schemes dlcp,pfabric --slicing sharded --pfabric-rto fixed

# Servers per job at 16 hosts.
variant scale-16-servers1 --scenario scale-16 --schemes dlcp,dctcp --servers 1
variant scale-16-servers4 --scenario scale-16 --schemes dlcp,dctcp --servers 4
variant scale-16-servers8 --scenario scale-16 --schemes dlcp,dctcp --servers 8

# Slicing: largest first and the library's sharded layout (2% size).
variant scale-16-largest-first --scenario scale-16 --slicing largest-first
variant scale-16-sharded --scenario scale-16 --slicing sharded
variant scale-48-largest-first --scenario scale-48 --slicing largest-first
variant scale-48-largest-first-seed2 --scenario scale-48 --schemes dlcp,dctcp --seed 2 --slicing largest-first
variant scale-48-largest-first-seed3 --scenario scale-48 --schemes dlcp,dctcp --seed 3 --slicing largest-first
variant scale-48-sharded --scenario scale-48 --slicing sharded
variant paper-144-largest-first --scenario paper-144 --slicing largest-first
variant paper-144-largest-first-seed2 --scenario paper-144 --seed 2 --slicing largest-first
variant paper-144-largest-first-seed3 --scenario paper-144 --seed 3 --slicing largest-first
variant paper-144-sharded --scenario paper-144 --schemes dlcp,dctcp,newreno,pias --slicing sharded

# No background, loss budget 1%, 10% and 49% (144 hosts, dlcp alone).
variant paper-144-load0 --scenario paper-144 --schemes dlcp --load 0
variant paper-144-load0-budget10 --scenario paper-144 --schemes dlcp --load 0 --budget 0.1
variant paper-144-load0-budget49 --scenario paper-144 --schemes dlcp --load 0 --budget 0.49

# Out of lockstep: eight iterations, and compute jitter of 2%, 5% and 10%.
variant scale-16-iterations8 --scenario scale-16 --schemes dlcp,dctcp --iterations 8
variant scale-16-jitter10 --scenario scale-16 --schemes dlcp,dctcp --compute-jitter 0.1
variant scale-16-jitter2 --scenario scale-16 --schemes dlcp,dctcp --compute-jitter 0.02
variant scale-16-jitter5 --scenario scale-16 --compute-jitter 0.05
variant scale-16-jitter5-seed2 --scenario scale-16 --seed 2 --compute-jitter 0.05
variant scale-16-jitter5-seed3 --scenario scale-16 --seed 3 --compute-jitter 0.05
variant scale-48-iterations8 --scenario scale-48 --schemes dlcp,dctcp --iterations 8
variant scale-48-jitter10 --scenario scale-48 --schemes dlcp,dctcp --compute-jitter 0.1
variant scale-48-jitter10-seed2 --scenario scale-48 --schemes dlcp,dctcp --seed 2 --compute-jitter 0.1
variant scale-48-jitter10-seed3 --scenario scale-48 --schemes dlcp,dctcp --seed 3 --compute-jitter 0.1
variant scale-48-jitter5 --scenario scale-48 --compute-jitter 0.05
variant scale-48-jitter5-seed2 --scenario scale-48 --seed 2 --compute-jitter 0.05
variant scale-48-jitter5-seed3 --scenario scale-48 --seed 3 --compute-jitter 0.05
variant paper-144-iterations8 --scenario paper-144 --schemes dlcp,dctcp --iterations 8
variant paper-144-jitter5 --scenario paper-144 --compute-jitter 0.05
variant paper-144-jitter5-seed2 --scenario paper-144 --seed 2 --compute-jitter 0.05
variant paper-144-jitter5-seed3 --scenario paper-144 --seed 3 --compute-jitter 0.05

# Parameter server at full size (--size-scale 1): budget, gray spine, no background, seeds, slicing,
# kept connections.
variant scale-16-full-size --scenario scale-16 --size-scale 1
variant scale-16-full-size-budget0 --scenario scale-16 --schemes dlcp --size-scale 1 --budget 0
variant scale-16-full-size-gray1 --scenario scale-16 --schemes dlcp --size-scale 1 --gray-loss 0.01
variant scale-16-full-size-gray1-budget0 --scenario scale-16 --schemes dlcp --size-scale 1 --budget 0 --gray-loss 0.01
variant scale-16-full-size-kept-connections --scenario scale-16 --size-scale 1 --tcp-connections persistent
variant scale-16-full-size-kept-connections-seed2 --scenario scale-16 --size-scale 1 --seed 2 --tcp-connections persistent
variant scale-16-full-size-kept-connections-seed3 --scenario scale-16 --size-scale 1 --seed 3 --tcp-connections persistent
variant scale-16-full-size-load0 --scenario scale-16 --schemes dlcp,dctcp --size-scale 1 --load 0
variant scale-16-full-size-load0-seed2 --scenario scale-16 --schemes dlcp --size-scale 1 --seed 2 --load 0
variant scale-16-full-size-load0-seed3 --scenario scale-16 --schemes dlcp --size-scale 1 --seed 3 --load 0
variant scale-16-full-size-seed2 --scenario scale-16 --schemes dlcp,dctcp --size-scale 1 --seed 2
variant scale-16-full-size-seed3 --scenario scale-16 --schemes dlcp,dctcp --size-scale 1 --seed 3
variant scale-16-full-size-seed3-iterations8 --scenario scale-16 --schemes dlcp --size-scale 1 --seed 3 --iterations 8
variant scale-16-full-size-sharded --scenario scale-16 --schemes dlcp,dctcp --size-scale 1 --slicing sharded
variant scale-48-full-size --scenario scale-48 --schemes dlcp,dctcp --size-scale 1
variant scale-48-full-size-largest-first --scenario scale-48 --schemes dlcp,dctcp --size-scale 1 --slicing largest-first
variant scale-48-full-size-load0 --scenario scale-48 --schemes dlcp --size-scale 1 --load 0
variant scale-48-full-size-load0-budget0 --scenario scale-48 --schemes dlcp --size-scale 1 --load 0 --budget 0
variant scale-48-full-size-load0-largest-first --scenario scale-48 --schemes dlcp --size-scale 1 --load 0 --slicing largest-first
variant scale-48-full-size-sharded --scenario scale-48 --schemes dlcp,dctcp --size-scale 1 --slicing sharded

# Ring all-reduce at full size: budget, gray spine, seeds.
variant scale-16-ring-full-size --scenario scale-16 --collective ring --size-scale 1
variant scale-16-ring-full-size-budget0 --scenario scale-16 --schemes dlcp --collective ring --size-scale 1 --budget 0
variant scale-16-ring-full-size-budget0-seed2 --scenario scale-16 --schemes dlcp --collective ring --size-scale 1 --seed 2 --budget 0
variant scale-16-ring-full-size-budget0-seed3 --scenario scale-16 --schemes dlcp --collective ring --size-scale 1 --seed 3 --budget 0
variant scale-16-ring-full-size-budget3 --scenario scale-16 --schemes dlcp --collective ring --size-scale 1 --budget 0.03
variant scale-16-ring-full-size-gray1 --scenario scale-16 --schemes dlcp,dctcp --collective ring --size-scale 1 --gray-loss 0.01
variant scale-16-ring-full-size-gray1-budget0 --scenario scale-16 --schemes dlcp --collective ring --size-scale 1 --budget 0 --gray-loss 0.01
variant scale-16-ring-full-size-gray5 --scenario scale-16 --schemes dlcp,dctcp --collective ring --size-scale 1 --gray-loss 0.05
variant scale-16-ring-full-size-gray5-budget0 --scenario scale-16 --schemes dlcp --collective ring --size-scale 1 --budget 0 --gray-loss 0.05
variant scale-16-ring-full-size-gray5-seed2 --scenario scale-16 --schemes dlcp,dctcp --collective ring --size-scale 1 --seed 2 --gray-loss 0.05
variant scale-16-ring-full-size-gray5-seed3 --scenario scale-16 --schemes dlcp,dctcp --collective ring --size-scale 1 --seed 3 --gray-loss 0.05
variant scale-16-ring-full-size-seed2 --scenario scale-16 --schemes dlcp,dctcp --collective ring --size-scale 1 --seed 2
variant scale-16-ring-full-size-seed3 --scenario scale-16 --schemes dlcp,dctcp --collective ring --size-scale 1 --seed 3

# The lowest band left to best effort (--ablate best-effort-sharing), seeds 1-3; dlcp alone but for
# the kept-connections ring run. Compare with the stored run's DCTCP.
variant scale-16-best-effort-alone --scenario scale-16 --schemes dlcp --ablate best-effort-sharing
variant scale-16-best-effort-alone-seed2 --scenario scale-16 --schemes dlcp --seed 2 --ablate best-effort-sharing
variant scale-16-best-effort-alone-seed3 --scenario scale-16 --schemes dlcp --seed 3 --ablate best-effort-sharing
variant scale-16-full-size-seed3-iterations8-best-effort-alone --scenario scale-16 --schemes dlcp --size-scale 1 --seed 3 --iterations 8 --ablate best-effort-sharing
variant scale-16-ring-best-effort-alone --scenario scale-16 --schemes dlcp --collective ring --ablate best-effort-sharing
variant scale-16-ring-best-effort-alone-seed2 --scenario scale-16 --schemes dlcp --collective ring --seed 2 --ablate best-effort-sharing
variant scale-16-ring-best-effort-alone-seed3 --scenario scale-16 --schemes dlcp --collective ring --seed 3 --ablate best-effort-sharing
variant scale-48-best-effort-alone --scenario scale-48 --schemes dlcp --ablate best-effort-sharing
variant scale-48-best-effort-alone-seed2 --scenario scale-48 --schemes dlcp --seed 2 --ablate best-effort-sharing
variant scale-48-best-effort-alone-seed3 --scenario scale-48 --schemes dlcp --seed 3 --ablate best-effort-sharing
variant scale-48-ring-best-effort-alone --scenario scale-48 --schemes dlcp --collective ring --ablate best-effort-sharing
variant scale-48-ring-best-effort-alone-seed2 --scenario scale-48 --schemes dlcp --collective ring --seed 2 --ablate best-effort-sharing
variant scale-48-ring-best-effort-alone-seed3 --scenario scale-48 --schemes dlcp --collective ring --seed 3 --ablate best-effort-sharing
variant scale-48-rto4ms-best-effort-alone --scenario scale-48 --schemes dlcp --tcp-min-rto-us 4000 --ablate best-effort-sharing
variant paper-144-best-effort-alone --scenario paper-144 --schemes dlcp --ablate best-effort-sharing
variant paper-144-best-effort-alone-seed2 --scenario paper-144 --schemes dlcp --seed 2 --ablate best-effort-sharing
variant paper-144-best-effort-alone-seed3 --scenario paper-144 --schemes dlcp --seed 3 --ablate best-effort-sharing
variant paper-144-ring-best-effort-alone --scenario paper-144 --schemes dlcp --collective ring --ablate best-effort-sharing
variant paper-144-ring-best-effort-alone-kept-connections --scenario paper-144 --schemes dlcp,dctcp,pfabric --collective ring --tcp-connections persistent --ablate best-effort-sharing
variant paper-144-ring-best-effort-alone-seed2 --scenario paper-144 --schemes dlcp --collective ring --seed 2 --ablate best-effort-sharing
variant paper-144-ring-best-effort-alone-seed3 --scenario paper-144 --schemes dlcp --collective ring --seed 3 --ablate best-effort-sharing
variant paper-144-rto4ms-best-effort-alone --scenario paper-144 --schemes dlcp --tcp-min-rto-us 4000 --ablate best-effort-sharing

# No drop-eligible packets (--ablate precedence), alone and with best effort alone, seeds 1-3 (dlcp
# alone).
variant scale-16-best-effort-alone-no-precedence --scenario scale-16 --schemes dlcp --ablate precedence,best-effort-sharing
variant scale-16-best-effort-alone-no-precedence-seed2 --scenario scale-16 --schemes dlcp --seed 2 --ablate precedence,best-effort-sharing
variant scale-16-best-effort-alone-no-precedence-seed3 --scenario scale-16 --schemes dlcp --seed 3 --ablate precedence,best-effort-sharing
variant scale-16-full-size-seed3-iterations8-best-effort-alone-no-precedence --scenario scale-16 --schemes dlcp --size-scale 1 --seed 3 --iterations 8 --ablate precedence,best-effort-sharing
variant scale-16-no-precedence --scenario scale-16 --schemes dlcp --ablate precedence
variant scale-16-no-precedence-seed2 --scenario scale-16 --schemes dlcp --seed 2 --ablate precedence
variant scale-16-no-precedence-seed3 --scenario scale-16 --schemes dlcp --seed 3 --ablate precedence
variant scale-16-ring-best-effort-alone-no-precedence --scenario scale-16 --schemes dlcp --collective ring --ablate precedence,best-effort-sharing
variant scale-16-ring-best-effort-alone-no-precedence-seed2 --scenario scale-16 --schemes dlcp --collective ring --seed 2 --ablate precedence,best-effort-sharing
variant scale-16-ring-best-effort-alone-no-precedence-seed3 --scenario scale-16 --schemes dlcp --collective ring --seed 3 --ablate precedence,best-effort-sharing
variant scale-16-ring-no-precedence --scenario scale-16 --schemes dlcp --collective ring --ablate precedence
variant scale-16-ring-no-precedence-seed2 --scenario scale-16 --schemes dlcp --collective ring --seed 2 --ablate precedence
variant scale-16-ring-no-precedence-seed3 --scenario scale-16 --schemes dlcp --collective ring --seed 3 --ablate precedence
variant scale-48-best-effort-alone-no-precedence --scenario scale-48 --schemes dlcp --ablate precedence,best-effort-sharing
variant scale-48-best-effort-alone-no-precedence-seed2 --scenario scale-48 --schemes dlcp --seed 2 --ablate precedence,best-effort-sharing
variant scale-48-best-effort-alone-no-precedence-seed3 --scenario scale-48 --schemes dlcp --seed 3 --ablate precedence,best-effort-sharing
variant scale-48-no-precedence --scenario scale-48 --schemes dlcp --ablate precedence
variant scale-48-no-precedence-seed2 --scenario scale-48 --schemes dlcp --seed 2 --ablate precedence
variant scale-48-no-precedence-seed3 --scenario scale-48 --schemes dlcp --seed 3 --ablate precedence
variant scale-48-ring-best-effort-alone-no-precedence --scenario scale-48 --schemes dlcp --collective ring --ablate precedence,best-effort-sharing
variant scale-48-ring-best-effort-alone-no-precedence-seed2 --scenario scale-48 --schemes dlcp --collective ring --seed 2 --ablate precedence,best-effort-sharing
variant scale-48-ring-best-effort-alone-no-precedence-seed3 --scenario scale-48 --schemes dlcp --collective ring --seed 3 --ablate precedence,best-effort-sharing
variant scale-48-ring-no-precedence --scenario scale-48 --schemes dlcp --collective ring --ablate precedence
variant scale-48-ring-no-precedence-seed2 --scenario scale-48 --schemes dlcp --collective ring --seed 2 --ablate precedence
variant scale-48-ring-no-precedence-seed3 --scenario scale-48 --schemes dlcp --collective ring --seed 3 --ablate precedence
variant paper-144-best-effort-alone-no-precedence --scenario paper-144 --schemes dlcp --ablate precedence,best-effort-sharing
variant paper-144-best-effort-alone-no-precedence-seed2 --scenario paper-144 --schemes dlcp --seed 2 --ablate precedence,best-effort-sharing
variant paper-144-best-effort-alone-no-precedence-seed3 --scenario paper-144 --schemes dlcp --seed 3 --ablate precedence,best-effort-sharing
variant paper-144-no-precedence --scenario paper-144 --schemes dlcp --ablate precedence
variant paper-144-no-precedence-seed2 --scenario paper-144 --schemes dlcp --seed 2 --ablate precedence
variant paper-144-no-precedence-seed3 --scenario paper-144 --schemes dlcp --seed 3 --ablate precedence
variant paper-144-ring-best-effort-alone-no-precedence --scenario paper-144 --schemes dlcp --collective ring --ablate precedence,best-effort-sharing
variant paper-144-ring-best-effort-alone-no-precedence-seed2 --scenario paper-144 --schemes dlcp --collective ring --seed 2 --ablate precedence,best-effort-sharing
variant paper-144-ring-best-effort-alone-no-precedence-seed3 --scenario paper-144 --schemes dlcp --collective ring --seed 3 --ablate precedence,best-effort-sharing
variant paper-144-ring-no-precedence --scenario paper-144 --schemes dlcp --collective ring --ablate precedence

# The port-wide drop-eligible threshold (--eligible-threshold port), the model of documents made
# before the key existed, seeds 1-3 (dlcp alone).
variant scale-16-best-effort-alone-eligible-per-port --scenario scale-16 --schemes dlcp --eligible-threshold port --ablate best-effort-sharing
variant scale-16-best-effort-alone-eligible-per-port-seed2 --scenario scale-16 --schemes dlcp --seed 2 --eligible-threshold port --ablate best-effort-sharing
variant scale-16-best-effort-alone-eligible-per-port-seed3 --scenario scale-16 --schemes dlcp --seed 3 --eligible-threshold port --ablate best-effort-sharing
variant scale-16-eligible-per-port --scenario scale-16 --schemes dlcp --eligible-threshold port
variant scale-16-eligible-per-port-seed2 --scenario scale-16 --schemes dlcp --seed 2 --eligible-threshold port
variant scale-16-eligible-per-port-seed3 --scenario scale-16 --schemes dlcp --seed 3 --eligible-threshold port
variant scale-16-full-size-seed3-iterations8-best-effort-alone-eligible-per-port --scenario scale-16 --schemes dlcp --size-scale 1 --seed 3 --iterations 8 --eligible-threshold port --ablate best-effort-sharing
variant scale-16-full-size-seed3-iterations8-eligible-per-port --scenario scale-16 --schemes dlcp --size-scale 1 --seed 3 --iterations 8 --eligible-threshold port
variant scale-16-ring-best-effort-alone-eligible-per-port --scenario scale-16 --schemes dlcp --collective ring --eligible-threshold port --ablate best-effort-sharing
variant scale-16-ring-best-effort-alone-eligible-per-port-seed2 --scenario scale-16 --schemes dlcp --collective ring --seed 2 --eligible-threshold port --ablate best-effort-sharing
variant scale-16-ring-best-effort-alone-eligible-per-port-seed3 --scenario scale-16 --schemes dlcp --collective ring --seed 3 --eligible-threshold port --ablate best-effort-sharing
variant scale-16-ring-eligible-per-port --scenario scale-16 --schemes dlcp --collective ring --eligible-threshold port
variant scale-16-ring-eligible-per-port-seed2 --scenario scale-16 --schemes dlcp --collective ring --seed 2 --eligible-threshold port
variant scale-16-ring-eligible-per-port-seed3 --scenario scale-16 --schemes dlcp --collective ring --seed 3 --eligible-threshold port
variant scale-48-best-effort-alone-eligible-per-port --scenario scale-48 --schemes dlcp --eligible-threshold port --ablate best-effort-sharing
variant scale-48-best-effort-alone-eligible-per-port-seed2 --scenario scale-48 --schemes dlcp --seed 2 --eligible-threshold port --ablate best-effort-sharing
variant scale-48-best-effort-alone-eligible-per-port-seed3 --scenario scale-48 --schemes dlcp --seed 3 --eligible-threshold port --ablate best-effort-sharing
variant scale-48-eligible-per-port --scenario scale-48 --schemes dlcp --eligible-threshold port
variant scale-48-eligible-per-port-seed2 --scenario scale-48 --schemes dlcp --seed 2 --eligible-threshold port
variant scale-48-eligible-per-port-seed3 --scenario scale-48 --schemes dlcp --seed 3 --eligible-threshold port
variant scale-48-ring-best-effort-alone-eligible-per-port --scenario scale-48 --schemes dlcp --collective ring --eligible-threshold port --ablate best-effort-sharing
variant scale-48-ring-best-effort-alone-eligible-per-port-seed2 --scenario scale-48 --schemes dlcp --collective ring --seed 2 --eligible-threshold port --ablate best-effort-sharing
variant scale-48-ring-best-effort-alone-eligible-per-port-seed3 --scenario scale-48 --schemes dlcp --collective ring --seed 3 --eligible-threshold port --ablate best-effort-sharing
variant scale-48-ring-eligible-per-port --scenario scale-48 --schemes dlcp --collective ring --eligible-threshold port
variant scale-48-ring-eligible-per-port-seed2 --scenario scale-48 --schemes dlcp --collective ring --seed 2 --eligible-threshold port
variant scale-48-ring-eligible-per-port-seed3 --scenario scale-48 --schemes dlcp --collective ring --seed 3 --eligible-threshold port
variant paper-144-best-effort-alone-eligible-per-port --scenario paper-144 --schemes dlcp --eligible-threshold port --ablate best-effort-sharing
variant paper-144-best-effort-alone-eligible-per-port-seed2 --scenario paper-144 --schemes dlcp --seed 2 --eligible-threshold port --ablate best-effort-sharing
variant paper-144-best-effort-alone-eligible-per-port-seed3 --scenario paper-144 --schemes dlcp --seed 3 --eligible-threshold port --ablate best-effort-sharing
variant paper-144-eligible-per-port --scenario paper-144 --schemes dlcp --eligible-threshold port
variant paper-144-eligible-per-port-seed2 --scenario paper-144 --schemes dlcp --seed 2 --eligible-threshold port
variant paper-144-eligible-per-port-seed3 --scenario paper-144 --schemes dlcp --seed 3 --eligible-threshold port
variant paper-144-ring-best-effort-alone-eligible-per-port --scenario paper-144 --schemes dlcp --collective ring --eligible-threshold port --ablate best-effort-sharing
variant paper-144-ring-best-effort-alone-eligible-per-port-seed2 --scenario paper-144 --schemes dlcp --collective ring --seed 2 --eligible-threshold port --ablate best-effort-sharing
variant paper-144-ring-best-effort-alone-eligible-per-port-seed3 --scenario paper-144 --schemes dlcp --collective ring --seed 3 --eligible-threshold port --ablate best-effort-sharing
variant paper-144-ring-eligible-per-port --scenario paper-144 --schemes dlcp --collective ring --eligible-threshold port
variant paper-144-ring-eligible-per-port-seed2 --scenario paper-144 --schemes dlcp --collective ring --seed 2 --eligible-threshold port
variant paper-144-ring-eligible-per-port-seed3 --scenario paper-144 --schemes dlcp --collective ring --seed 3 --eligible-threshold port

# Shared-band pacing (--dlcp-pacing shared-band), seeds 1-3, and an eight-iteration ring run with
# and without it (dlcp alone).
variant scale-16-full-size-seed3-iterations8-shared-band-pacing --scenario scale-16 --schemes dlcp --size-scale 1 --seed 3 --iterations 8 --dlcp-pacing shared-band
variant scale-16-full-size-shared-band-pacing --scenario scale-16 --schemes dlcp --size-scale 1 --dlcp-pacing shared-band
variant scale-16-ring-full-size-shared-band-pacing --scenario scale-16 --schemes dlcp --collective ring --size-scale 1 --dlcp-pacing shared-band
variant scale-16-ring-full-size-shared-band-pacing-seed2 --scenario scale-16 --schemes dlcp --collective ring --size-scale 1 --seed 2 --dlcp-pacing shared-band
variant scale-16-ring-full-size-shared-band-pacing-seed3 --scenario scale-16 --schemes dlcp --collective ring --size-scale 1 --seed 3 --dlcp-pacing shared-band
variant scale-16-ring-shared-band-pacing --scenario scale-16 --schemes dlcp --collective ring --dlcp-pacing shared-band
variant scale-16-ring-shared-band-pacing-seed2 --scenario scale-16 --schemes dlcp --collective ring --seed 2 --dlcp-pacing shared-band
variant scale-16-ring-shared-band-pacing-seed3 --scenario scale-16 --schemes dlcp --collective ring --seed 3 --dlcp-pacing shared-band
variant scale-16-shared-band-pacing --scenario scale-16 --schemes dlcp --dlcp-pacing shared-band
variant scale-16-shared-band-pacing-seed2 --scenario scale-16 --schemes dlcp --seed 2 --dlcp-pacing shared-band
variant scale-16-shared-band-pacing-seed3 --scenario scale-16 --schemes dlcp --seed 3 --dlcp-pacing shared-band
variant scale-48-full-size-shared-band-pacing --scenario scale-48 --schemes dlcp --size-scale 1 --dlcp-pacing shared-band
variant scale-48-ring-shared-band-pacing --scenario scale-48 --schemes dlcp --collective ring --dlcp-pacing shared-band
variant scale-48-ring-shared-band-pacing-seed2 --scenario scale-48 --schemes dlcp --collective ring --seed 2 --dlcp-pacing shared-band
variant scale-48-ring-shared-band-pacing-seed3 --scenario scale-48 --schemes dlcp --collective ring --seed 3 --dlcp-pacing shared-band
variant scale-48-shared-band-pacing --scenario scale-48 --schemes dlcp --dlcp-pacing shared-band
variant scale-48-shared-band-pacing-seed2 --scenario scale-48 --schemes dlcp --seed 2 --dlcp-pacing shared-band
variant scale-48-shared-band-pacing-seed3 --scenario scale-48 --schemes dlcp --seed 3 --dlcp-pacing shared-band
variant paper-144-ring-iterations8 --scenario paper-144 --schemes dlcp --collective ring --iterations 8
variant paper-144-ring-iterations8-shared-band-pacing --scenario paper-144 --schemes dlcp --collective ring --iterations 8 --dlcp-pacing shared-band
variant paper-144-ring-shared-band-pacing --scenario paper-144 --schemes dlcp --collective ring --dlcp-pacing shared-band
variant paper-144-ring-shared-band-pacing-seed2 --scenario paper-144 --schemes dlcp --collective ring --seed 2 --dlcp-pacing shared-band
variant paper-144-ring-shared-band-pacing-seed3 --scenario paper-144 --schemes dlcp --collective ring --seed 3 --dlcp-pacing shared-band
variant paper-144-shared-band-pacing --scenario paper-144 --schemes dlcp --dlcp-pacing shared-band
variant paper-144-shared-band-pacing-seed2 --scenario paper-144 --schemes dlcp --seed 2 --dlcp-pacing shared-band
variant paper-144-shared-band-pacing-seed3 --scenario paper-144 --schemes dlcp --seed 3 --dlcp-pacing shared-band

rmdir "$out/.work" 2>/dev/null || true
