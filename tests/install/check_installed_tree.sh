#!/usr/bin/env bash
# Checks an installed dlcp tree (`cmake --install`, or an unpacked Debian package) as its users
# meet it: the C++ and C consumers (CMake and pkg-config), the dlcp command with its data, the
# Python package, and that nothing installed points back into the source or build tree.
# Usage: check_installed_tree.sh PREFIX WORK_DIR SOURCE_DIR BUILD_DIR PYTHON_DIR PYTHON
set -euo pipefail
prefix="$(realpath "$1")"
work="$2"
source_dir="$(realpath "$3")"
build_dir="$(realpath "$4")"
python_dir="$5"
python="$6"
here="$(cd "$(dirname "$0")" && pwd)"

"$here/run_consumers.sh" "$prefix" "$work/consumers"

echo "-- no source or build path in what was installed"
for file in "$prefix"/bin/dlcp "$prefix"/lib*/libdlcp.so* $(find "$prefix" -name '*.so' -path '*dlcp*'); do
  [ -f "$file" ] || continue
  if readelf -p .rodata "$file" 2>/dev/null | grep -qF -e "$source_dir/" -e "$build_dir/"; then
    echo "$file names the source or build directory in its constants" >&2
    exit 1
  fi
done
if grep -rlF -e "$source_dir" -e "$build_dir" "$prefix" --include='*.cmake' --include='*.pc' \
    --include='*.py'; then
  echo "the files above name the source or build directory" >&2
  exit 1
fi

echo "-- the dlcp command and its data"
"$prefix/bin/dlcp" --help >/dev/null
[ -f "$prefix/share/dlcp/models/resnet50.json" ] || { echo "no model profiles installed" >&2; exit 1; }
(cd "$work" && "$prefix/bin/dlcp" bench train --system dlcp-ring --model resnet50 --ranks 2 \
  --iters 1 --warmup 0 --gradient-scale 0.01 --compute-ms 0 --timeout-s 60 >"$work/train.txt")
grep -q "iteration" "$work/train.txt" || { cat "$work/train.txt"; exit 1; }

echo "-- the Python package"
site="$prefix/$python_dir"
[ -f "$site/dlcp/__init__.py" ] || { echo "no Python package in $site" >&2; exit 1; }
report="$(cd "$work" && env -u PYTHONPATH PYTHONPATH="$site" PYTHONDONTWRITEBYTECODE=1 \
  "$python" -m dlcp)"
echo "$report"
echo "$report" | grep -qF "package: $site/dlcp" || { echo "dlcp was not loaded from $site" >&2; exit 1; }
echo "$report" | grep -q "^core module: $site/dlcp/_core" ||
  { echo "the core module is missing from $site" >&2; exit 1; }
(cd "$work" && env PYTHONPATH="$site" PYTHONDONTWRITEBYTECODE=1 "$python" -c \
  "import dlcp, dlcp.torch; s = dlcp.HashStore(); assert dlcp.torch.ProcessGroupDlcp; print('dlcp', dlcp.__version__, 'imports')")
