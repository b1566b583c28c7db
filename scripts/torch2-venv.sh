#!/usr/bin/env bash
# Makes build/venv-torch2: a virtual environment with pip's torch 2.x (CPU build), in which the
# test suite runs the Python tests a second time (Debian's /usr/bin/python3 runs them with
# Debian's torch 1.13). Idempotent. Usage: scripts/torch2-venv.sh [DIR]
#
# The interpreter is the python3 first on PATH (pip's torch wheels need a CPython with pip and
# venv; Debian's own needs python3-venv). Versions are pinned: an unpinned torch would pull a
# CUDA build of several GB.
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${1:-build/venv-torch2}"
torch_pin="torch==2.13.0"
numpy_pin="numpy==2.4.6"
python="$(command -v python3)"
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "
import sys, importlib.metadata as m
sys.exit(0 if (m.version('torch').split('+')[0], m.version('numpy')) == ('${torch_pin#*==}', '${numpy_pin#*==}') else 1)
" 2>/dev/null; then
  exit 0
fi
if ! "$python" -c "import venv, ensurepip" 2>/dev/null; then
  echo "dlcp: $python cannot make a virtual environment (Debian: apt-get install python3-venv)" >&2
  exit 1
fi
echo "dlcp: making $venv with $torch_pin and $numpy_pin for $("$python" --version)"
"$python" -m venv --clear "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$torch_pin" "$numpy_pin"
