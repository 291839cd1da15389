#!/usr/bin/env bash
# Installs the Debian 12 packages segbloom builds, tests and benchmarks with, when missing.
set -euo pipefail

packages=(
  meson ninja-build pkg-config cmake g++ clang libclang-rt-14-dev
  libxxhash-dev libcereal-dev catch2 libbenchmark-dev
  libleveldb-dev libbloom-dev libhiredis-dev redis-server
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "segbloom: installing ${missing[*]}" >&2
  # DEBIAN_FRONTEND on sudo's command line: sudo (env_reset) drops it from the environment.
  export DEBIAN_FRONTEND=noninteractive
  sudo_cmd=()
  [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo DEBIAN_FRONTEND=noninteractive)
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi
