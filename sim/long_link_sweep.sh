#!/usr/bin/env bash
# The long-link sweep of docs/simulation.md ("Two sites over a long link"): for each seed, round
# trip and collective, three documents: dlcp and DCTCP (`base`), dlcp without its loss budget
# (`nobudget`, --budget 0) and dlcp with a parity packet per 8 protected packets (`parity`).
#
#   sim/long_link_sweep.sh DLCP_SIM OUT_DIR SCENARIO "SEEDS" "RTTS_MS" "COLLECTIVES" [OPTION...]
#
# e.g. sim/long_link_sweep.sh build-sim/sim/dlcp-sim out long-link-16 "1 2 3" "2 10 40" "ps ring" \
#        --load 0
# Each document is OUT_DIR/SCENARIO-s<seed>-rtt<ms>-<collective>-<variant>.json, its printed table
# OUT_DIR/logs/ the same name .txt; the OPTIONs go to every run. A document already in OUT_DIR is
# skipped, so an interrupted sweep resumes. `sim/tables.py --long-link OUT_DIR/*.json` prints the
# table. Each run's wall time is printed as it ends.
set -euo pipefail

if [[ $# -lt 6 ]]; then
  echo "usage: $0 DLCP_SIM OUT_DIR SCENARIO \"SEEDS\" \"RTTS_MS\" \"COLLECTIVES\" [OPTION...]" >&2
  exit 2
fi
sim=$1
out=$2
scenario=$3
seeds=$4
rtts=$5
collectives=$6
shift 6
[[ -x $sim ]] || { echo "$0: $sim is not an executable" >&2; exit 2; }
mkdir -p "$out/logs"

for seed in $seeds; do
  for rtt in $rtts; do
    for collective in $collectives; do
      for variant in base nobudget parity; do
        case $variant in
          base) schemes=(--schemes dlcp,dctcp --jobs 2) ;;
          nobudget) schemes=(--schemes dlcp --budget 0) ;;
          parity) schemes=(--schemes dlcp --parity 8) ;;
        esac
        name=$scenario-s$seed-rtt$rtt-$collective-$variant
        [[ -f $out/$name.json ]] && continue
        scratch=$(mktemp -d)
        start=$SECONDS
        status=0
        "$sim" --scenario "$scenario" --seed "$seed" --long-link-rtt-ms "$rtt" \
          --collective "$collective" "${schemes[@]}" "$@" --out "$scratch" --progress-s 0 \
          > "$out/logs/$name.txt" 2>&1 || status=$?
        [[ $status -eq 0 ]] && mv "$scratch/$scenario.json" "$out/$name.json"
        rm -rf "$scratch"
        echo "$name: exit $status, $((SECONDS - start)) s"
      done
    done
  done
done
