#!/usr/bin/env bash
# The main job, from a fresh Debian 12 machine: installs what is missing, builds, and
# runs the seen-videos simulation (examples/seen_videos.cpp). Extra arguments go to it,
# e.g. scripts/demo.sh --users 10000 --window 8
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh

dir=build-release
if [[ -f "$dir/build.ninja" ]]; then
  meson setup --reconfigure "$dir" --buildtype=release -Dtests=false -Dbenchmarks=false >/dev/null
else
  meson setup "$dir" --buildtype=release -Dtests=false -Dbenchmarks=false >/dev/null
fi
ninja -C "$dir" -j "$(nproc)" examples/seen_videos >/dev/null
exec "$dir/examples/seen_videos" "$@"
