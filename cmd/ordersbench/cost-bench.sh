#!/bin/bash
# The PERFORMANCE.md cost curve, consumer drain and memory series, each
# against redis-server --appendonly yes --appendfsync always in the same run.
#
#   curve  XADD/s and latency (ordersbench, 50 producers, -P 16 and -P 1, no
#          consumers, orders:{0..15}) for raftstream nodes × shards in
#          $CURVE (default "1x1 1x4 1x16 1x64 3x1 3x4 3x16 3x64 5x16"),
#          replication factor 3 (capped at the node count). A Redis row is
#          measured right before each raftstream configuration.
#   drain  a backlog of $DRAIN_N orders is produced, then 4 consumers of one
#          group drain it (XREADGROUP COUNT 100 + pipelined XACK, -verify):
#          Redis, raftstream 1x1 and 3x16.
#   rss    1M uniform order entries (`customer … amount … sku …`, the
#          engine's BenchmarkRedisMemoryRatio entries) sent with
#          redis-cli --pipe to Redis and to a raftstream 1x1 node; then
#          MEMORY USAGE and the process's VmRSS / RssAnon / RssFile.
#
# Usage: cmd/ordersbench/cost-bench.sh [outdir] [duration] [sections...]
# Every server runs on free loopback ports in a temp dir and is stopped by
# its PID. Each row carries the 1-minute load average when it started.
# Output: $outdir/results.csv (one line per row) and the raw ordersbench
# JSON/text per row.
set -u
out=${1:-$(mktemp -d)}
dur=${2:-5s}
shift $(( $# < 2 ? $# : 2 ))
sections=${*:-curve drain rss}
CURVE=${CURVE:-1x1 1x4 1x16 1x64 3x1 3x4 3x16 3x64 5x16}
DRAIN_N=${DRAIN_N:-200000}
RSS_N=${RSS_N:-1000000}
mkdir -p "$out"
root=$(cd "$(dirname "$0")/../.." && pwd)
ob="$out/ordersbench"
rs="$out/raftstream"
(cd "$root" && go build -o "$ob" ./cmd/ordersbench && go build -o "$rs" ./cmd/raftstream) || exit 1
csv="$out/results.csv"
[ -s "$csv" ] || echo "section,target,P,xadd_per_s,xadd_p50_ms,xadd_p99_ms,errors,consumed_per_s,extra,load1" >"$csv"

# shellcheck source=ports.sh
. "$(dirname "$0")/ports.sh"
wait_until() {
  local n=$1; shift
  for _ in $(seq "$n"); do "$@" && return 0; sleep 0.1; done
  return 1
}
load1() { cut -d' ' -f1 /proc/loadavg; }

pids=()
dirs=()
RS_EXTRA=()
stop_all() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  pids=()
  for d in "${dirs[@]}"; do rm -rf "$d"; done
  dirs=()
}
trap stop_all EXIT

redis_is_ours() { [ "$(redis-cli -p "$1" info server 2>/dev/null | tr -d '\r' | sed -n 's/^process_id://p')" = "$2" ]; }
cluster_ok() { redis-cli -p "$1" cluster info 2>/dev/null | grep -q cluster_state:ok; }
pong() { redis-cli -p "$1" ping 2>/dev/null | grep -q PONG; }

# start_redis: sets addr, flags, spid (AOF always).
start_redis() {
  local dir; dir=$(mktemp -d); dirs+=("$dir")
  read -r port < <(freeports 1)
  redis-server --port "$port" --bind 127.0.0.1 --dir "$dir" --save '' --appendonly yes \
    --appendfsync always --daemonize no --logfile "$dir/redis.log" &
  spid=$!; pids+=("$spid")
  wait_until 100 redis_is_ours "$port" "$spid" || { echo "redis did not start" >&2; exit 1; }
  addr=127.0.0.1:$port; flags=(); port0=$port
}

# start_rs NODES SHARDS: sets addr, flags, spid (node 0's PID), port0.
start_rs() {
  local n=$1 s=$2 dir; dir=$(mktemp -d); dirs+=("$dir")
  local ports; read -r -a ports < <(freeports $((2 * n)))
  local join="" i
  for ((i = 0; i < n; i++)); do join+="${join:+,}127.0.0.1:${ports[n + i]}"; done
  for ((i = 0; i < n; i++)); do
    if [ "$n" = 1 ]; then
      "$rs" -port "${ports[0]}" -cluster-port "${ports[1]}" -shards "$s" -dir "$dir/n0" -log-level warn "${RS_EXTRA[@]}" >"$dir/log0" 2>&1 &
    else
      "$rs" -port "${ports[i]}" -cluster-port "${ports[n + i]}" -shards "$s" -dir "$dir/n$i" -bootstrap-expect "$n" \
        -join "$join" -node-name "n$i" -log-level warn >"$dir/log$i" 2>&1 &
    fi
    pids+=($!)
    [ "$i" = 0 ] && spid=$!
  done
  port0=${ports[0]}
  if [ "$n" = 1 ]; then
    wait_until 600 pong "$port0" || { echo "raftstream ${n}x$s did not start" >&2; tail -5 "$dir"/log*; exit 1; }
    addr=127.0.0.1:$port0; flags=()
  else
    wait_until 1800 cluster_ok "$port0" || { echo "raftstream ${n}x$s did not form" >&2; tail -5 "$dir"/log*; exit 1; }
    wait_balanced "$port0" "$s" 90 || echo "warning: raftstream ${n}x$s: leaders not spread evenly after 90 s" >&2
    addr=""
    for ((i = 0; i < n; i++)); do addr+="${addr:+,}127.0.0.1:${ports[i]}"; done
    flags=(-cluster)
  fi
}

# row SECTION TARGET P ordersbench-args...: runs ordersbench, appends a CSV line.
row() {
  local section=$1 target=$2 P=$3; shift 3
  local name="$section-$target-P$P" l; l=$(load1)
  echo "== $name (load $l)" >&2
  "$ob" -addr "$addr" "${flags[@]}" -producers 50 -pipeline "$P" -reset -progress=false \
    -json "$out/$name.json" "$@" >"$out/$name.txt" 2>&1 || { echo "   failed:" >&2; tail -5 "$out/$name.txt" >&2; }
  python3 - "$out/$name.json" "$section" "$target" "$P" "$l" >>"$csv" <<'EOF'
import json, sys
path, section, target, P, load = sys.argv[1:]
try:
    r = json.load(open(path))
except Exception:
    print(f"{section},{target},{P},,,,,,failed,{load}"); sys.exit()
x = next(l for l in r["latency"] if l["name"] == "xadd")
g = r["totals"]["groups"]
cons = "/".join(f'{x["per_sec"]:.0f}' for x in g)
v = r.get("verify")
extra = "" if v is None else ("verify OK" if v["ok"] else "verify FAILED")
print(f'{section},{target},{P},{r["totals"]["produce_per_sec"]:.0f},{x["p50_us"]/1e3:.2f},{x["p99_us"]/1e3:.2f},'
      f'{r["totals"]["produce_errors"]},{cons},{extra},{load}')
EOF
  tail -1 "$csv" >&2
}

xadd_rows() { # TARGET
  for P in 16 1; do
    row curve "$1" "$P" -consumers 0 -duration "$dur"
  done
}

for section in $sections; do
  case $section in
  curve)
    # One redis-server for the whole section, measured before every
    # raftstream configuration and once more at the end: each raftstream
    # row is compared with the mean of the Redis rows right before and
    # after it (cost-table.py).
    start_redis; raddr=$addr rpid=$spid
    for c in $CURVE; do
      addr=$raddr flags=(); xadd_rows redis-always
      start_rs "${c%x*}" "${c#*x}"; xadd_rows "raftstream-$c"
      for p in "${pids[@]}"; do [ "$p" = "$rpid" ] || kill "$p"; done
      for p in "${pids[@]}"; do [ "$p" = "$rpid" ] || wait "$p" 2>/dev/null; done
      pids=("$rpid")
    done
    addr=$raddr flags=(); xadd_rows redis-always
    stop_all ;;
  drain)
    for t in redis-always raftstream-1x1 raftstream-3x16; do
      case $t in
      redis-always) start_redis ;;
      *) c=${t#raftstream-}; start_rs "${c%x*}" "${c#*x}" ;;
      esac
      row drain "$t" 16 -count "$DRAIN_N" -groups billing -consumers 4 -consume-after -verify -drain-timeout 300s
      stop_all
    done ;;
  rss)
    resp="$out/fill.resp"
    [ -s "$resp" ] || python3 - "$RSS_N" >"$resp" <<'EOF'
import sys
n = int(sys.argv[1])
w = sys.stdout.buffer
def cmd(*a):
    b = [b"*%d\r\n" % len(a)]
    for x in a:
        x = x.encode()
        b.append(b"$%d\r\n%s\r\n" % (len(x), x))
    return b"".join(b)
for i in range(n):
    w.write(cmd("XADD", "s", "%d-0" % (i + 1), "customer", "c%07d" % (i % 10000000),
                "amount", "%05d" % (10000 + i % 90000), "sku", "SKU-%06d" % (i % 1000000)))
EOF
    for t in redis-always raftstream-1x1; do
      case $t in
      redis-always) start_redis ;;
      *) read -r admin < <(freeports 1); RS_EXTRA=(-admin-addr "127.0.0.1:$admin" -pprof); start_rs 1 1; RS_EXTRA=() ;;
      esac
      l=$(load1)
      base=$(awk '/^VmRSS/{print $2}' /proc/"$spid"/status)
      echo "== rss $t (load $l)" >&2
      redis-cli -p "$port0" --pipe <"$resp" >"$out/rss-$t.txt" 2>&1
      sleep 2
      len=$(redis-cli -p "$port0" xlen s)
      mu=$(redis-cli -p "$port0" memory usage s samples 0)
      rss=$(awk '/^VmRSS/{print $2}' /proc/"$spid"/status)
      anon=$(awk '/^RssAnon/{print $2}' /proc/"$spid"/status)
      file=$(awk '/^RssFile/{print $2}' /proc/"$spid"/status)
      heap=""
      if [ "$t" != redis-always ]; then
        # Go heap after a forced GC (the heap profile's gc=1), then RSS
        # once the runtime has had 30s to return freed pages to the OS.
        heap=$(curl -s "http://127.0.0.1:$admin/debug/pprof/heap?debug=1&gc=1" | sed -n 's/^# HeapInuse = \([0-9]*\).*/\1/p')
        sleep 30
        heap=" go_heap_inuse_after_gc=$heap rss_after_gc_30s_kb=$(awk '/^VmRSS/{print $2}' /proc/"$spid"/status)"
      fi
      echo "rss,$t,,,,,,,xlen=$len memory_usage=$mu rss_kb=$rss rss_anon_kb=$anon rss_file_kb=$file rss_empty_kb=$base$heap,$l" >>"$csv"
      tail -1 "$csv" >&2
      stop_all
    done ;;
  *) echo "unknown section $section" >&2; exit 2 ;;
  esac
done
echo "results in $csv" >&2
