#!/bin/bash
# Interleaved A/B of raftstream variants on a 3-node cluster: for each round
# and each variant, a fresh cluster on loopback (SHARDS shards, default 16),
# started once its leaders are spread evenly (wait_balanced), then
# ordersbench -P 16 (50 producers, orders:{0..15}, no consumers) for DUR
# (default 10s), then XADD/s, p99, errors and the nodes' CPU per XADD.
# Cluster throughput on a small shared machine varies a lot from run to run;
# with OBFLAGS="-rate 20000" every variant gets the same offered load and CPU
# per XADD is the steadier measure.
#
# Usage: cmd/ordersbench/ab-cluster.sh VARIANT...
#   VARIANT is a raftstream binary, optionally followed by node flags in the
#   same word: "/tmp/rs-old" "/tmp/rs-new --go-memory-floor 64MiB"
# Env: ROUNDS (default 3), SHARDS (16), DUR (10s), P (16), OBFLAGS (extra
# ordersbench flags). ordersbench is built from this tree.
set -u
[ $# -ge 1 ] || { sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2; }
here=$(cd "$(dirname "$0")" && pwd); root=$(cd "$here/../.." && pwd)
# shellcheck source=ports.sh
. "$here/ports.sh"
d=$(mktemp -d)
pids=()
trap 'stop_pids; rm -rf "$d"' EXIT
(cd "$root" && go build -o "$d/ob" ./cmd/ordersbench) || exit 1
hz=$(getconf CLK_TCK)
shards=${SHARDS:-16}
echo "round,variant,xadd_per_s,p99,errors,node_cpu_us_per_xadd"
for r in $(seq "${ROUNDS:-3}"); do
  k=0
  for v in "$@"; do
    k=$((k + 1))
    read -r bin flags <<<"$v"
    read -r -a ports < <(freeports 6)
    join="127.0.0.1:${ports[3]},127.0.0.1:${ports[4]},127.0.0.1:${ports[5]}"
    for i in 0 1 2; do
      # shellcheck disable=SC2086 # flags are words
      "$bin" -port "${ports[i]}" -cluster-port "${ports[3 + i]}" -shards "$shards" -dir "$d/r$r-v$k/n$i" \
        -bootstrap-expect 3 -join "$join" -node-name "n$i" -log-level warn ${flags:-} >"$d/r$r-v$k.log$i" 2>&1 &
      pids+=($!)
    done
    for _ in $(seq 600); do redis-cli -p "${ports[0]}" cluster info 2>/dev/null | grep -q cluster_state:ok && break; sleep 0.1; done
    wait_balanced "${ports[0]}" "$shards" 90 || echo "warning: round $r, $v: leaders not spread evenly after 90 s" >&2
    t0=$(pid_ticks "${pids[@]}")
    # shellcheck disable=SC2086 # OBFLAGS are words
    out=$("$d/ob" -addr "127.0.0.1:${ports[0]},127.0.0.1:${ports[1]},127.0.0.1:${ports[2]}" -cluster -producers 50 \
      -pipeline "${P:-16}" -consumers 0 -duration "${DUR:-10s}" -progress=false ${OBFLAGS:-} 2>&1)
    t1=$(pid_ticks "${pids[@]}")
    read -r n e rate p99 < <(awk '$1 == "xadd" {print $2, $3, $4, $6}' <<<"$out")
    cpu="?"
    [ "${n:-0}" -gt 0 ] && cpu=$(echo "scale=1; ($t1 - $t0) * 1000000 / $hz / $n" | bc)
    echo "$r,\"$v\",${rate:-0},${p99:-?},${e:-?},$cpu"
    stop_pids
  done
done
