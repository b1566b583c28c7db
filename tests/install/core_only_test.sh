#!/usr/bin/env bash
# Configures the library alone (every optional part off) in a fresh build directory and checks
# that it looks for none of the optional parts' packages, and that libdlcp links threads and
# libsodium only. Configure only: the library's sources are the ones the main build compiles.
# Usage: core_only_test.sh SOURCE_DIR
set -euo pipefail
source_dir="$1"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cmake -S "$source_dir" -B "$work/build" -G Ninja -DDLCP_BUILD_TOOLS=OFF -DDLCP_BUILD_TESTBED=OFF \
  -DDLCP_BUILD_SIM=OFF -DDLCP_BUILD_PYTHON=OFF -DDLCP_BUILD_BASELINES=OFF \
  >"$work/configure.log" || { cat "$work/configure.log"; exit 1; }
grep "library (shared) ON, tools OFF, testbed OFF, baselines OFF, simulator OFF, python OFF, tests OFF" \
  "$work/configure.log"
# What a configure looked for shows in its cache: none of the optional parts' packages.
for dependency in MPI GLOO CLI11 nlohmann_json Torch pybind11 Python NS3 GTest TCMALLOC; do
  if grep -qi "^${dependency}[_A-Za-z]*:" "$work/build/CMakeCache.txt" ||
     grep -qi "^DLCP_${dependency}" "$work/build/CMakeCache.txt"; then
    echo "the library-only configure looked for $dependency:" >&2
    grep -i "^\(DLCP_\)\?${dependency}" "$work/build/CMakeCache.txt" >&2
    exit 1
  fi
done
link="$(ninja -C "$work/build" -t commands dlcp | grep -e "-shared" | grep -e "-o src/libdlcp.so")"
libraries="$(tr ' ' '\n' <<<"$link" | grep -E '^-l|\.so(\.[0-9]+)*$|\.a$' | grep -vE '^src/libdlcp\.so|soname' || true)"
grep -q sodium <<<"$libraries" || { echo "cannot read libdlcp's link line: $link" >&2; exit 1; }
extra="$(grep -vE '^-l(sodium|pthread)$|/libsodium\.(so|a)' <<<"$libraries" || true)"
if [ -n "$extra" ]; then
  echo "libdlcp links more than threads and libsodium: $extra" >&2
  exit 1
fi
echo "library-only configure: needs a C++20 compiler, threads and libsodium"
