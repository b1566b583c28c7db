#!/usr/bin/env bash
# Builds the Debian packages (cpack -G DEB), checks their names and Depends, unpacks them with
# dpkg -x into a fresh directory and runs check_installed_tree.sh on it.
# Usage: debian_test.sh SOURCE_DIR BUILD_DIR PYTHON_DIR PYTHON
set -euo pipefail
source_dir="$1" build_dir="$2" python_dir="$3" python="$4"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
(cd "$build_dir" && cpack -G DEB -B "$work/packages" >"$work/cpack.log") ||
  { cat "$work/cpack.log"; exit 1; }
mapfile -t debs < <(ls "$work"/packages/*.deb)
[ "${#debs[@]}" -eq 4 ] || { echo "expected 4 packages, got: ${debs[*]}" >&2; exit 1; }
for deb in "${debs[@]}"; do
  name="$(dpkg-deb -f "$deb" Package)"
  depends="$(dpkg-deb -f "$deb" Depends)"
  echo "$name: Depends: $depends"
  case "$name" in
    libdlcp[0-9]*) expect=(libc6 libsodium23 libstdc++6) ;;
    libdlcp-dev) expect=(libdlcp) ;;
    dlcp-tools) expect=(libgloo iproute2 nftables openmpi-bin) ;;
    python3-dlcp) expect=(python3-torch python3-numpy) ;;
    *) echo "unexpected package $name" >&2; exit 1 ;;
  esac
  for package in "${expect[@]}"; do
    grep -q "$package" <<<"$depends" || { echo "$name does not depend on $package" >&2; exit 1; }
  done
  dpkg -x "$deb" "$work/root"
done
[ -L "$work/root/usr/lib/libdlcp.so" ] && [ -f "$(readlink -f "$work/root/usr/lib/libdlcp.so")" ] ||
  { echo "libdlcp.so is not a link to the versioned library" >&2; exit 1; }
soname="$(objdump -p "$work"/root/usr/lib/libdlcp.so.*.*.* | awk '$1 == "SONAME" {print $2}')"
[[ "$soname" =~ ^libdlcp\.so\.[0-9]+\.[0-9]+$ ]] && [ -L "$work/root/usr/lib/$soname" ] ||
  { echo "libdlcp's SONAME '$soname' is not versioned or not installed as a link" >&2; exit 1; }
"$(dirname "$0")/check_installed_tree.sh" "$work/root/usr" "$work" "$source_dir" "$build_dir" \
  "$python_dir" "$python"
echo "Debian package test passed"
