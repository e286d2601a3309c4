#!/bin/sh
# Measures ordersbench against a local redis-server with AOF fsync "always"
# and "everysec", pipeline 1 and 16, 50 producers (the PERFORMANCE.md table).
# Usage: cmd/ordersbench/bench_redis.sh [duration] [outdir]
# Every redis-server is started on a free loopback port in a temp dir and
# stopped by its PID.
set -eu
dur=${1:-10s}
out=${2:-$(mktemp -d)}
mkdir -p "$out"
root=$(cd "$(dirname "$0")/../.." && pwd)
bin="$out/ordersbench"
(cd "$root" && go build -o "$bin" ./cmd/ordersbench)
for fsync in always everysec; do
  for p in 1 16; do
    dir=$(mktemp -d)
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    redis-server --port "$port" --bind 127.0.0.1 --dir "$dir" --save '' --appendonly yes \
      --appendfsync "$fsync" --daemonize no --logfile "$dir/redis.log" &
    pid=$!
    i=0
    # Wait until the server answering on $port is the one we started.
    until [ "$(redis-cli -p "$port" info server 2>/dev/null | tr -d '\r' | sed -n 's/^process_id://p')" = "$pid" ]; do
      i=$((i+1)); [ $i -lt 100 ] || { kill "$pid" 2>/dev/null; echo "redis-server did not start on $port" >&2; exit 1; }; sleep 0.05
    done
    name="redis-aof-$fsync-P$p"
    echo "== $name" >&2
    "$bin" -addr "127.0.0.1:$port" -producers 50 -pipeline "$p" -duration "$dur" -verify -progress=false \
      -json "$out/$name.json" -html "$out/$name.html" | tee "$out/$name.txt" || true
    kill "$pid"; wait "$pid" 2>/dev/null || true
    rm -rf "$dir"
  done
done
echo "results in $out" >&2
