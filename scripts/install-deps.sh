#!/usr/bin/env bash
# Installs the Debian packages dlcp needs to build and test. Idempotent; needs root (or sudo).
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  libgtest-dev libgmock-dev googletest
  nlohmann-json3-dev libcli11-dev
  clang-14 libclang-rt-14-dev clang-format
  iproute2 nftables iperf3 iputils-ping
  libgloo-dev openmpi-bin libopenmpi-dev
  libns3-dev libgsl-dev libgoogle-perftools-dev
  libsodium-dev
  python3-matplotlib
  python3-dev python3-venv python3-numpy python3-torch pybind11-dev dataset-fashion-mnist
)

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    sudo_cmd=(sudo)
  else
    echo "dlcp: installing ${missing[*]} needs root; run as root or install them first." >&2
    exit 1
  fi
fi
echo "dlcp: installing Debian packages: ${missing[*]}"
"${sudo_cmd[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
