# Sourced by scripts/test.sh and scripts/demo.sh: start_local_redis NAME starts a private
# redis-server on a Unix socket in a new temporary directory (no TCP port, nothing saved),
# sets redis_socket to its path, and stops it and removes the directory when the calling
# script exits, however it exits.
start_local_redis() {
  redis_dir=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX")
  redis-server --port 0 --unixsocket "$redis_dir/redis.sock" --save '' --appendonly no \
    --dir "$redis_dir" --logfile "$redis_dir/redis.log" &
  redis_pid=$!
  trap 'kill "$redis_pid" 2>/dev/null; wait "$redis_pid" 2>/dev/null; rm -rf "$redis_dir"' EXIT
  for _ in $(seq 100); do [[ -S "$redis_dir/redis.sock" ]] && break; sleep 0.1; done
  [[ -S "$redis_dir/redis.sock" ]] || { echo "segbloom: redis-server did not start" >&2; exit 1; }
  redis_socket="$redis_dir/redis.sock"
}
