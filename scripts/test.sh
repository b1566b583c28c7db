#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds, runs every unit and integration test
# (and the one-minute soak; the Python tests under Debian's torch 1.13 and under pip's torch 2.x), reruns them under AddressSanitizer + UndefinedBehaviorSanitizer and
# the transport and collectives tests under ThreadSanitizer, then builds the libFuzzer targets
# with clang and runs each for a bounded time on its corpus. Prints how long each stage took.
#
# While developing, `scripts/test.sh --quick` installs what is missing and builds the same way, then
# runs only the tests labelled "quick" (`ctest --test-dir build -L quick`): the unit tests, the
# loopback integration tests of the protocol, transport, collectives and stores, and the testbed's
# and simulator's tests on fixed inputs; about half a minute on 2 cores after the build. Not in it:
# the floods, the unbiasedness statistics, the tests that start `dlcp bench` or mpirun, the soak,
# the Python, install and Debian-package tests, the simulator scenario, the testbed's real network,
# the sanitizer builds and the fuzzers (tests/CMakeLists.txt says how a test gets the label).
# Usage: scripts/test.sh [--quick]
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0
case "$#:${1-}" in
  0:) ;;
  1:--quick) quick=1 ;;
  *)
    echo "usage: scripts/test.sh [--quick]" >&2
    exit 2
    ;;
esac
stage_start=$SECONDS
stage_done() {
  echo "-- $1: $((SECONDS - stage_start)) s"
  stage_start=$SECONDS
}
scripts/install-deps.sh
# The Python tests run under Debian's torch 1.13 and again under pip's torch 2.x in this venv
# (not needed by the quick tests).
if [ "$quick" -eq 0 ]; then
  scripts/torch2-venv.sh build/venv-torch2
fi
scripts/build.sh
stage_done "build"

if [ "$quick" -eq 1 ]; then
  echo "== quick tests (label quick)"
  ctest --test-dir build --output-on-failure -j2 -L quick
  stage_done "quick tests"
  echo "== quick tests passed (scripts/test.sh without --quick runs the whole suite)"
  exit 0
fi

echo "== unit and integration tests"
ctest --test-dir build --output-on-failure -j2
stage_done "unit and integration tests"

# Sanitizer builds use the project's compiler (gcc) with assertions on; they build only the test
# binaries and the programs their tests start, not the simulator or the Python module. Usage:
# sanitized_build DIR OPTIMISATION SANITIZER_FLAGS TARGET...
sanitized_build() {
  cmake -S . -B "$1" -G Ninja -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=$2 -g1" \
    "-DCMAKE_CXX_FLAGS=$3 -fno-omit-frame-pointer" -DDLCP_BUILD_SIM=OFF -DDLCP_BUILD_PYTHON=OFF \
    -DDLCP_TEST_CHILD_PROGRAMS=OFF -DDLCP_WERROR=ON >/dev/null
  ninja -C "$1" "${@:4}"
}

echo "== AddressSanitizer + UndefinedBehaviorSanitizer: unit and integration tests"
# Not run here: the MPI baseline (LeakSanitizer reports OpenMPI's own allocations at exit), the
# soak (label soak; its minute runs in the plain build above) and the tests that start the dlcp
# command (BenchProcesses): building the command and its tools would double this stage for
# collectives the in-process tests already run here. -O0: AddressSanitizer finds the same errors
# unoptimised, and compiles in half the time.
sanitized_build build-asan -O0 "-fsanitize=address,undefined -fno-sanitize-recover=undefined" \
  dlcp_unit_tests dlcp_integration_tests
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j2 -R '^(unit|integration)\.' \
  -E 'MpiBaseline|BenchProcesses'
stage_done "AddressSanitizer + UndefinedBehaviorSanitizer"

echo "== ThreadSanitizer: transport, collectives, stores, faults and floods"
# Not run here: the Gloo and MPI baselines (uninstrumented libraries), the tests that start
# the dlcp command as separate processes (no threads of this binary in them), and the long
# garbage floods and the unbiasedness statistics, which repeat the same collectives for over a
# minute under this sanitizer and belong to the plain and AddressSanitizer runs.
# -O1, as ThreadSanitizer asks for: unoptimised code runs several times slower under it.
sanitized_build build-tsan -O1 "-fsanitize=thread" dlcp_integration_tests
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/scripts/tsan-suppressions.txt" \
  ctest --test-dir build-tsan --output-on-failure -j2 -R '^integration\.' \
  -E 'Gloo|Mpi|BenchProcesses|Flood\.(Garbage|UnknownMessages)|UnbiasedAggregation\.'
stage_done "ThreadSanitizer"

echo "== fuzzers"
if command -v clang++-14 >/dev/null 2>&1; then
  # Only the fuzzers and what they link: clang 14 cannot compile the PyTorch headers.
  cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_COMPILER=clang++-14 -DDLCP_BUILD_FUZZERS=ON -DDLCP_BUILD_TESTS=OFF \
    -DDLCP_BUILD_SIM=OFF -DDLCP_BUILD_PYTHON=OFF >/dev/null
  ninja -C build-fuzz $(for corpus in fuzz/corpus/*/; do echo "$(basename "$corpus")_fuzz"; done)
  seconds="${DLCP_FUZZ_SECONDS:-20}"
  for corpus in fuzz/corpus/*/; do
    name="$(basename "$corpus")"
    work="$(mktemp -d)"
    echo "-- ${name}_fuzz for ${seconds}s"
    build-fuzz/fuzz/"${name}_fuzz" -max_total_time="$seconds" -print_final_stats=1 \
      -artifact_prefix="$work/" "$work" "$corpus" 2>&1 | grep -E "stat::number_of_executed_units|ERROR|crash" || true
    if ls "$work"/crash-* >/dev/null 2>&1; then
      echo "fuzzer ${name} found a crash: $(ls "$work"/crash-*)" >&2
      exit 1
    fi
    rm -rf "$work"
  done
else
  echo "clang++-14 not found: fuzzers not built"
fi
stage_done "fuzzers"
echo "== all tests passed"
