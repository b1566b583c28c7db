#!/usr/bin/env bash
# Configures and builds dlcp into build/ (Release with debug info). Usage: scripts/build.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDLCP_WERROR=ON >/dev/null
ninja -C build
