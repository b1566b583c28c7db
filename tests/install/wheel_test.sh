#!/usr/bin/env bash
# The Python package as pip users get it: `pip wheel .` (pyproject.toml, scikit-build-core) with
# the python3 first on PATH, then a fresh virtual environment with a pinned torch and numpy and
# the wheel, and, from a directory outside the source tree with no PYTHONPATH:
#   - `python -m dlcp` reports the version of CMakeLists.txt's project() and the venv's
#     site-packages;
#   - wheel_ddp.py, a 2-rank DDP job under torchrun, with each variant in $DLCP_WHEEL_VARIANTS
#     (default "hook dlcp"): hook = the gloo backend with dlcp's communication hook; dlcp = the
#     dlcp torch.distributed backend.
# Usage: wheel_test.sh SOURCE_DIR CACHE_DIR [PYTHON]
#   CACHE_DIR keeps the wheel's CMake build directory between runs (the first build compiles the
#   library and dlcp._core, about 2.5 minutes on 2 cores; a rerun only what changed; each run
#   configures afresh). The wheel and the venv are made anew each run (the venv takes ~20 s).
#   PYTHON: the interpreter to build for (default: $DLCP_WHEEL_PYTHON, else python3 on PATH).
# Exits 77 (skipped) when that interpreter cannot make a venv.
set -euo pipefail
script_dir="$(cd "$(dirname "$0")" && pwd)"
source_dir="$(cd "$1" && pwd)"
cache_dir="$2"
torch_pin="torch==2.13.0"
numpy_pin="numpy==2.4.6"
# The interpreter itself, not a pyenv shim (which would put its own cmake first on PATH).
python="$("${3:-${DLCP_WHEEL_PYTHON:-python3}}" -c 'import sys; print(sys.executable)')"
if ! "$python" -c "import venv, ensurepip" 2>/dev/null; then
  echo "SKIP: $python cannot make a virtual environment (Debian: apt-get install python3-venv)"
  exit 77
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
unset PYTHONPATH PYTHONHOME PYTHONUSERBASE
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-2}"
elapsed() { echo "-- $1: $((SECONDS - started)) s"; started=$SECONDS; }
started=$SECONDS

# The wheel. CMake: Debian's when there is one (≥ 3.22 is all the project needs); otherwise
# scikit-build-core brings pip's cmake into the isolated build environment.
mkdir -p "$work/bin" "$cache_dir"
if [ -x /usr/bin/cmake ]; then
  ln -s /usr/bin/cmake "$work/bin/cmake"
fi
build_dir="$cache_dir/$(printf %s "$python" | tr -c 'A-Za-z0-9.' _)"
# The staged package is remade each run, so that a Python file since deleted from python/dlcp
# cannot reach the wheel from an earlier build.
rm -rf "$build_dir/python/dlcp"
(cd "$source_dir" && PATH="$work/bin:$PATH" "$python" -m pip wheel . --no-deps \
  --disable-pip-version-check -w "$work/wheels" -C "build-dir=$build_dir" -C cmake.fresh=true \
  >"$work/wheel.log" 2>&1) || { cat "$work/wheel.log"; echo "pip wheel . failed" >&2; exit 1; }
version="$(sed -nE 's/^project\(dlcp VERSION ([0-9.]+).*/\1/p' "$source_dir/CMakeLists.txt")"
mapfile -t wheels < <(ls "$work"/wheels/*.whl)
[ "${#wheels[@]}" -eq 1 ] && [[ "$(basename "${wheels[0]}")" == dlcp-"$version"-cp3*.whl ]] ||
  { echo "expected one dlcp-$version wheel, got: ${wheels[*]}" >&2; exit 1; }
wheel="${wheels[0]}"
# Only the package at the wheel's root: no headers, libdlcp, CMake package, commands or libtorch
# extension.
contents="$("$python" -c "import sys, zipfile; print('\n'.join(zipfile.ZipFile(sys.argv[1]).namelist()))" "$wheel")"
others="$(grep -vE '^dlcp/|^dlcp-[0-9.]+\.dist-info/' <<<"$contents" || true)"
[ -z "$others" ] || { echo "the wheel holds more than the dlcp package: $others" >&2; exit 1; }
grep -qE '^dlcp/_core\..*\.so$' <<<"$contents" || { echo "the wheel has no dlcp/_core" >&2; exit 1; }
if grep -E '^dlcp/_torch' <<<"$contents"; then
  echo "the wheel holds the libtorch extension" >&2
  exit 1
fi
echo "$(basename "$wheel"): $(wc -l <<<"$contents") files"
elapsed "pip wheel"

# A user's venv: their torch (pinned: an unpinned one pulls a CUDA build of several GB), numpy,
# the wheel.
"$python" -m venv "$work/venv"
"$work/venv/bin/python" -m pip install --quiet --disable-pip-version-check "$torch_pin" \
  "$numpy_pin" "$wheel" >"$work/install.log" 2>&1 ||
  { cat "$work/install.log"; echo "pip install failed" >&2; exit 1; }
elapsed "venv with $torch_pin, $numpy_pin and the wheel"

mkdir "$work/run"
cd "$work/run"
site="$("$work/venv/bin/python" -c "import sysconfig; print(sysconfig.get_path('platlib'))")"
report="$("$work/venv/bin/python" -m dlcp)"
echo "$report"
grep -qx "dlcp $version" <<<"$report" ||
  { echo "python -m dlcp: not version $version" >&2; exit 1; }
grep -qx "package: $site/dlcp" <<<"$report" ||
  { echo "python -m dlcp: not loaded from $site/dlcp" >&2; exit 1; }
installed="$("$work/venv/bin/python" -c "import importlib.metadata as m; print(m.version('dlcp'))")"
[ "$installed" = "$version" ] || { echo "pip's dlcp is $installed, not $version" >&2; exit 1; }

cp "$script_dir/wheel_ddp.py" "$work/run/"
for variant in ${DLCP_WHEEL_VARIANTS:-hook dlcp}; do
  case "$variant" in
    hook) arguments=(--backend gloo --hook) ;;
    dlcp) arguments=(--backend dlcp) ;;
    *) echo "unknown variant $variant (hook, dlcp)" >&2; exit 1 ;;
  esac
  echo "== torchrun: wheel_ddp.py ${arguments[*]}"
  OMP_NUM_THREADS=1 timeout 180 "$work/venv/bin/torchrun" --standalone --nproc_per_node 2 \
    wheel_ddp.py "${arguments[@]}" --package-dir "$site/dlcp" >"$work/ddp.log" 2>&1 ||
    { cat "$work/ddp.log"; echo "the 2-rank DDP job (${arguments[*]}) failed" >&2; exit 1; }
  grep "^wheel_ddp rank" "$work/ddp.log"
  elapsed "torchrun ($variant)"
done
echo "wheel test passed"
