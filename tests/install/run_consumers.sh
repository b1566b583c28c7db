#!/usr/bin/env bash
# Builds and runs the consumer projects against an installed dlcp tree: the C++ and the C one
# with find_package(dlcp), then both again with pkg-config only. Each runs a 2-rank all-reduce.
# Usage: run_consumers.sh PREFIX WORK_DIR
set -euo pipefail
prefix="$(realpath "$1")"
work="$2"
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$work"

for project in consumer_cpp consumer_c; do
  echo "-- find_package(dlcp): $project"
  cmake -S "$here/$project" -B "$work/$project" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
  ninja -C "$work/$project" >/dev/null
done
"$work/consumer_cpp/allreduce"
"$work/consumer_c/allreduce_c"

echo "-- pkg-config"
pc_dir="$(dirname "$(find "$prefix" -name dlcp.pc -path '*/pkgconfig/*' | head -1)")"
export PKG_CONFIG_PATH="$pc_dir"
version="$(pkg-config --modversion dlcp)"
echo "pkg-config finds dlcp $version in $pc_dir"
# shellcheck disable=SC2046
g++ -std=c++20 -o "$work/allreduce_pc" "$here/consumer_cpp/allreduce.cpp" $(pkg-config --cflags --libs dlcp)
# shellcheck disable=SC2046
cc -o "$work/allreduce_c_pc" "$here/consumer_c/allreduce.c" $(pkg-config --cflags --libs dlcp)
libdir="$(realpath "$(pkg-config --variable=libdir dlcp)")"
LD_LIBRARY_PATH="$libdir" "$work/allreduce_pc"
LD_LIBRARY_PATH="$libdir" "$work/allreduce_c_pc"
# Linked against the installed library, not against anything in a build tree.
loaded="$(LD_LIBRARY_PATH="$libdir" ldd "$work/allreduce_c_pc" | awk '$1 ~ /^libdlcp/ {print $3}')"
[ "$(realpath "$loaded")" = "$(realpath "$libdir"/libdlcp.so)" ] ||
  { echo "allreduce_c_pc loads '$loaded', not $libdir/libdlcp.so" >&2; exit 1; }
