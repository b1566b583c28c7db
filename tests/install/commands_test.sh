#!/usr/bin/env bash
# The commands split by audience: `dlcp` lists the product's subcommands and a Benchmarks group,
# `dlcp bench` hands over to dlcp-bench, and only dlcp-bench replaces the global operator new
# (the heap-counting one of the allocation benchmarks).
# Usage: commands_test.sh DLCP DLCP_BENCH
set -euo pipefail
dlcp="$1" bench="$2"
help="$("$dlcp" --help)"
for command in demo testbed switch-config store-server; do
  grep -qE "^  $command " <<<"$help" || { echo "dlcp --help does not list $command" >&2; exit 1; }
done
sed -n '/^Benchmarks:/,$p' <<<"$help" | grep -qE "^  bench " ||
  { echo "dlcp --help has no Benchmarks group with bench" >&2; echo "$help" >&2; exit 1; }
bench_help="$("$dlcp" bench --help)"
for command in p2p allreduce train; do
  grep -qE "^  $command " <<<"$bench_help" ||
    { echo "dlcp bench --help does not list $command" >&2; exit 1; }
done
# operator new(size_t) is _Znwm on x86-64.
nm --defined-only "$bench" | grep -qE ' T _Znwm$' ||
  { echo "dlcp-bench does not define operator new: the allocation counter is missing" >&2; exit 1; }
if nm --defined-only "$dlcp" | grep -qE ' T _Znwm$'; then
  echo "dlcp replaces the global operator new; only dlcp-bench may" >&2
  exit 1
fi
echo "commands test passed"
