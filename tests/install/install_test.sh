#!/usr/bin/env bash
# `cmake --install` into a fresh prefix, then check_installed_tree.sh on it; and the directory
# the Python package goes to is on the interpreter's own path under the default prefix, so a
# plain `cmake --install` needs no PYTHONPATH and no .pth file.
# Usage: install_test.sh SOURCE_DIR BUILD_DIR PYTHON_DIR PYTHON
set -euo pipefail
source_dir="$1" build_dir="$2" python_dir="$3" python="$4"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
"$(dirname "$0")/check_installed_tree.sh" "$work/prefix" "$work" "$source_dir" "$build_dir" \
  "$python_dir" "$python"
for prefix in /usr/local /usr; do
  "$python" -c "import sys; sys.exit(0 if '$prefix/$python_dir' in sys.path else 1)" ||
    { echo "$prefix/$python_dir is not on $python's path" >&2; exit 1; }
done
echo "install test passed"
