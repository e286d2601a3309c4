#!/bin/bash
# The cluster's cost model (PERFORMANCE.md): for each shard count, a fresh
# 3-node raftstream cluster on loopback, ordersbench -P 16 (50 producers,
# orders:{0..15}, no consumers), and then the XADDs made, the node log
# writes (raft_log_requests, summed over the nodes) and the nodes' CPU time.
# The last lines fit CPU = a × XADDs + b × log writes over the rows.
# Usage: cmd/ordersbench/cluster-cost.sh [duration] [shard counts...]
#        (default: 10s 16 3 1)
# The load starts once the leaders are spread evenly (wait_balanced);
# BALANCED=0 starts it at cluster_state:ok instead.
set -u
dur=${1:-10s}; shift || true
shards_list=${*:-16 3 1}
here=$(cd "$(dirname "$0")" && pwd); root=$(cd "$here/../.." && pwd)
# shellcheck source=ports.sh
. "$here/ports.sh"
d=$(mktemp -d)
pids=()
trap 'stop_pids; rm -rf "$d"' EXIT
(cd "$root" && go build -o "$d/ob" ./cmd/ordersbench && go build -o "$d/rs" ./cmd/raftstream) || exit 1
hz=$(getconf CLK_TCK)
echo "shards,xadds,log_writes,node_cpu_s,errors" | tee "$d/rows.csv"
for s in $shards_list; do
  read -r -a ports < <(freeports 6)
  join="127.0.0.1:${ports[3]},127.0.0.1:${ports[4]},127.0.0.1:${ports[5]}"
  for i in 0 1 2; do
    "$d/rs" -port "${ports[i]}" -cluster-port "${ports[3 + i]}" -shards "$s" -dir "$d/s$s/n$i" \
      -bootstrap-expect 3 -join "$join" -node-name "n$i" -log-level warn >"$d/s$s.log$i" 2>&1 &
    pids+=($!)
  done
  for _ in $(seq 600); do redis-cli -p "${ports[0]}" cluster info 2>/dev/null | grep -q cluster_state:ok && break; sleep 0.1; done
  [ "${BALANCED:-1}" = 0 ] || wait_balanced "${ports[0]}" "$s" 90 || echo "warning: $s shards: leaders not spread evenly after 90 s" >&2
  w0=0; for i in 0 1 2; do w0=$((w0 + $(redis-cli -p "${ports[i]}" info persistence | tr -d '\r' | awk -F: '/^raft_log_requests:/{print $2}'))); done
  t0=$(pid_ticks "${pids[@]}")
  out=$("$d/ob" -addr "127.0.0.1:${ports[0]},127.0.0.1:${ports[1]},127.0.0.1:${ports[2]}" -cluster -producers 50 \
    -pipeline 16 -consumers 0 -duration "$dur" -progress=false 2>&1)
  t1=$(pid_ticks "${pids[@]}")
  w1=0; for i in 0 1 2; do w1=$((w1 + $(redis-cli -p "${ports[i]}" info persistence | tr -d '\r' | awk -F: '/^raft_log_requests:/{print $2}'))); done
  read -r n e < <(sed -n 's/^produced \([0-9]*\) orders .*, \([0-9]*\) errors$/\1 \2/p' <<<"$out")
  echo "$s,${n:-0},$((w1 - w0)),$(echo "scale=2; ($t1 - $t0) / $hz" | bc),${e:-?}" | tee -a "$d/rows.csv"
  stop_pids
done
python3 - "$d/rows.csv" <<'PY'
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if int(r["xadds"]) > 0]
d = [(float(r["xadds"]), float(r["log_writes"]), float(r["node_cpu_s"])) for r in rows]
if not d:
    sys.exit("no row made an XADD")
if len(d) < 2:
    print("no fit: it needs two shard counts or more")
    sys.exit(0)
s11 = sum(x * x for x, w, y in d); s12 = sum(x * w for x, w, y in d); s22 = sum(w * w for x, w, y in d)
t1 = sum(x * y for x, w, y in d); t2 = sum(w * y for x, w, y in d)
det = s11 * s22 - s12 * s12
a = (t1 * s22 - t2 * s12) / det; b = (s11 * t2 - s12 * t1) / det
print(f"fit: node CPU = {a * 1e6:.1f} us x XADDs + {b * 1e6:.0f} us x log writes")
for (x, w, y), r in zip(d, rows):
    m = a * x + b * w
    print(f"  {r['shards']:>3} shards: measured {y:.2f} s, model {m:.2f} s, log writes {b * w / m:.0%} of it, "
          f"{3 * x / w:.0f} XADD copies per write")
PY
