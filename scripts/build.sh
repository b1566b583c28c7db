#!/usr/bin/env bash
# Configures and builds dlcp into build/ (optimised, with line-table debug info). Usage:
# scripts/build.sh
set -euo pipefail
cd "$(dirname "$0")/.."
# -g1, not -g: backtraces still name functions, files and lines, and the template-heavy pybind11,
# libtorch and test sources compile in about half the time (full -g doubles their code generation).
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" -DDLCP_WERROR=ON >/dev/null
ninja -C build
