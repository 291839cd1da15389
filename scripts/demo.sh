#!/usr/bin/env bash
# The main job, from a fresh Debian 12 machine: installs what is missing, builds the
# `segbloom` tool (release) and runs `segbloom demo`: a simulated short-video feed served
# through the seen-store on LevelDB, with a policy change mid-run, then the
# false-positive curve of a segmented filter against a fixed-size one (CSV and SVG).
# Extra arguments go to the demo (`scripts/demo.sh --help` lists them), e.g.
#   scripts/demo.sh --users 5000 --days 60
#   scripts/demo.sh --redis                 # on a redis-server started here, on a Unix socket
#   scripts/demo.sh --redis /run/redis.sock # on a running Redis
set -euo pipefail
caller=$(pwd)  # the demo writes its CSV and SVG files here (or in --out DIR)
cd "$(dirname "$0")/.."
root=$(pwd)

scripts/install-deps.sh

dir=build-release
source scripts/setup-build.sh
setup_build "$dir" gcc -Dbuildtype=release -Dtests=false -Dbenchmarks=false
# Quiet unless the build fails; then its output says why.
if ! build_log=$(ninja -C "$dir" -j "$(nproc)" src/cli/segbloom 2>&1); then
  echo "$build_log" >&2
  echo "segbloom: the build failed (above)" >&2
  exit 1
fi

# A bare --redis (no socket path after it): start a private redis-server on a Unix socket
# in a temporary directory, pass its socket, and stop it when this script exits.
args=()
start_redis=false
while (($#)); do
  if [[ $1 == --redis && ( $# -eq 1 || $2 == -* ) ]]; then
    start_redis=true
  else
    args+=("$1")
  fi
  shift
done
if $start_redis; then
  source scripts/local-redis.sh
  start_local_redis segbloom-demo-redis
  args+=(--redis "$redis_socket")
fi

# Not exec: the trap above must stop redis-server after the demo.
status=0
(cd "$caller" && "$root/$dir/src/cli/segbloom" demo ${args[@]+"${args[@]}"}) || status=$?
exit "$status"
