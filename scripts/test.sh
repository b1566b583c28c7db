#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds, runs every unit and integration test,
# then builds the libFuzzer targets with clang and runs each for a bounded time on its corpus.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh

echo "== unit and integration tests"
ctest --test-dir build --output-on-failure -j2

echo "== fuzzers"
if command -v clang++-14 >/dev/null 2>&1; then
  cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_COMPILER=clang++-14 -DDLCP_BUILD_FUZZERS=ON -DDLCP_BUILD_TESTS=OFF >/dev/null
  ninja -C build-fuzz
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
echo "== all tests passed"
