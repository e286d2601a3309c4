#!/bin/bash
# Runs the PERFORMANCE.md series: ordersbench with 50 producers at pipeline 1
# and 16 against
#   redis-aof-always     redis-server --appendonly yes --appendfsync always
#   redis-aof-everysec   redis-server --appendonly yes --appendfsync everysec
#   raftstream-1         one raftstream node (one shard, the embedded default)
#   raftstream-3         three raftstream nodes, ordersbench -cluster
# Usage: cmd/ordersbench/bench.sh [duration] [outdir] [targets...]
# Every server runs on free loopback ports in a temp dir and is stopped by
# its PID; redis-server is checked to be ours by its process_id.
set -u
dur=${1:-10s}
out=${2:-$(mktemp -d)}
shift $(( $# < 2 ? $# : 2 ))
targets=${*:-redis-aof-always redis-aof-everysec raftstream-1 raftstream-3}
mkdir -p "$out"
root=$(cd "$(dirname "$0")/../.." && pwd)
ob="$out/ordersbench"
rs="$out/raftstream"
(cd "$root" && go build -o "$ob" ./cmd/ordersbench && go build -o "$rs" ./cmd/raftstream) || exit 1

# shellcheck source=ports.sh
. "$(dirname "$0")/ports.sh"

# wait_until <tries> <command...>: poll every 0.1s
wait_until() {
  local n=$1; shift
  for _ in $(seq "$n"); do "$@" && return 0; sleep 0.1; done
  return 1
}

pids=()
stop_all() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  pids=()
}
trap stop_all EXIT

redis_is_ours() { [ "$(redis-cli -p "$1" info server 2>/dev/null | tr -d '\r' | sed -n 's/^process_id://p')" = "$2" ]; }
cluster_ok() { redis-cli -p "$1" cluster info 2>/dev/null | grep -q cluster_state:ok; }
pong() { redis-cli -p "$1" ping 2>/dev/null | grep -q PONG; }

for target in $targets; do
  dir=$(mktemp -d)
  flags=()
  case $target in
  redis-aof-always|redis-aof-everysec)
    read -r port < <(freeports 1)
    redis-server --port "$port" --bind 127.0.0.1 --dir "$dir" --save '' --appendonly yes \
      --appendfsync "${target#redis-aof-}" --daemonize no --logfile "$dir/redis.log" &
    pids+=($!)
    wait_until 100 redis_is_ours "$port" "${pids[0]}" || { echo "$target did not start" >&2; exit 1; }
    addr=127.0.0.1:$port ;;
  raftstream-1)
    read -r port bus < <(freeports 2)
    "$rs" -port "$port" -cluster-port "$bus" -dir "$dir/data" -log-level warn >"$dir/log" 2>&1 &
    pids+=($!)
    wait_until 300 pong "$port" || { echo "$target did not start" >&2; cat "$dir/log"; exit 1; }
    addr=127.0.0.1:$port ;;
  raftstream-3)
    read -r p0 p1 p2 b0 b1 b2 < <(freeports 6)
    join=127.0.0.1:$b0,127.0.0.1:$b1,127.0.0.1:$b2
    for i in 0 1 2; do
      p=p$i b=b$i
      "$rs" -port "${!p}" -cluster-port "${!b}" -dir "$dir/n$i" -bootstrap-expect 3 -join "$join" \
        -node-name "n$i" -log-level warn >"$dir/log$i" 2>&1 &
      pids+=($!)
    done
    wait_until 600 cluster_ok "$p0" || { echo "$target did not form" >&2; tail -5 "$dir"/log*; exit 1; }
    addr=127.0.0.1:$p0,127.0.0.1:$p1,127.0.0.1:$p2
    flags=(-cluster) ;;
  *) echo "unknown target $target" >&2; exit 2 ;;
  esac
  for P in 1 16; do
    name="$target-P$P"
    echo "== $name ($(uptime | sed 's/.*load/load/'))" >&2
    "$ob" -addr "$addr" "${flags[@]}" -producers 50 -pipeline "$P" -duration "$dur" -reset -verify -progress=false \
      -json "$out/$name.json" -html "$out/$name.html" | tee "$out/$name.txt"
  done
  stop_all
  rm -rf "$dir"
done
echo "results in $out" >&2
