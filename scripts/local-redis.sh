# Sourced by scripts/test.sh and scripts/demo.sh: start_local_redis NAME starts a private
# redis-server on a Unix socket in a new temporary directory (no TCP port, nothing saved),
# sets redis_socket to its path, and stops it and removes the directory when the calling
# script exits, however it exits. Should the script be killed with SIGKILL (e.g. by a CI
# timeout), no trap runs: the server still gets SIGTERM from the kernel when the script
# dies (setpriv --pdeathsig), but its temporary directory (its log) is left behind.
start_local_redis() {
  redis_dir=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX")
  setpriv --pdeathsig TERM redis-server --port 0 --unixsocket "$redis_dir/redis.sock" \
    --save '' --appendonly no --dir "$redis_dir" --logfile "$redis_dir/redis.log" &
  redis_pid=$!
  trap stop_local_redis EXIT
  for _ in $(seq 100); do [[ -S "$redis_dir/redis.sock" ]] && break; sleep 0.1; done
  [[ -S "$redis_dir/redis.sock" ]] || { echo "segbloom: redis-server did not start" >&2; exit 1; }
  redis_socket="$redis_dir/redis.sock"
}

# The EXIT trap. The server may have died already (kill and wait then fail): every step
# runs, and the script keeps its own exit status.
stop_local_redis() {
  local status=$?
  kill "$redis_pid" 2>/dev/null || true
  wait "$redis_pid" 2>/dev/null || true
  rm -rf "$redis_dir" || true
  exit "$status"
}
