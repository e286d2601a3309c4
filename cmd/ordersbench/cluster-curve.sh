#!/bin/bash
# The cost curve: XADD/s and p99 of raftstream with NODES × SHARDS (each shard
# replicated on min(3, NODES) nodes, the server's default) against one
# redis-server --appendonly yes --appendfsync always, on this machine, in the
# same run. For each configuration in $CURVE: Redis, then a fresh raftstream
# cluster on loopback (measured once its shard leaders are spread evenly),
# each at every pipeline depth in $PIPELINES: ordersbench, 50 producers,
# orders:{0..15}, no consumers, for $DUR. A last Redis row closes the run;
# each raftstream row is compared with the mean of the Redis rows measured
# right before and right after it.
#
# Usage: cmd/ordersbench/cluster-curve.sh
# Env: CURVE (default "1x1 1x4 1x16 1x64 3x1 3x3 3x4 3x16 3x64 5x16"),
#      DUR (10s), PIPELINES ("16 1").
# raftstream and ordersbench are built from this tree into a temp dir, where
# every server runs on free loopback ports; servers are stopped by PID and
# the temp dir is removed at exit. Rows go to stdout as they are measured,
# then the table.
set -u
curve=${CURVE:-1x1 1x4 1x16 1x64 3x1 3x3 3x4 3x16 3x64 5x16}
dur=${DUR:-10s}
pipelines=${PIPELINES:-16 1}
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

# rows target: one ordersbench run per pipeline depth; appends
# "target P xadd/s p99_ms errors load1" to $tmp/rows and prints it.
rows() {
  local P l
  for P in $pipelines; do
    l=$(load1)
    ob_row "$1" "$P" -consumers 0 -duration "$dur" | awk -v l="$l" '{print $1, $2, $3, $4, $5, l}' | tee -a "$tmp/rows"
  done
}

echo "# server P XADD/s p99_ms errors load1"
start_redis; raddr=$addr rpid=$spid
for c in $curve; do
  addr=$raddr; rows redis
  start_raftstream "${c%x*}" "${c#*x}"; rows "$c"
  for p in "${nodepids[@]}"; do kill "$p"; done
  for p in "${nodepids[@]}"; do wait "$p" 2>/dev/null; done
  pids=("$rpid")
done
addr=$raddr; rows redis
stop_pids

echo
awk '
  { t[NR] = $1; P[NR] = $2; x[NR] = $3; p99[NR] = $4; e[NR] = $5; l[NR] = $6 }
  END {
    print "| nodes × shards | P | Redis XADD/s (p99 before/after) | raftstream XADD/s (p99) | ratio | errors | load |"
    print "|---|---|---|---|---|---|---|"
    for (i = 1; i <= NR; i++) {
      if (t[i] == "redis") continue
      b = 0; a = 0
      for (j = i - 1; j >= 1; j--) if (t[j] == "redis" && P[j] == P[i]) { b = j; break }
      for (j = i + 1; j <= NR; j++) if (t[j] == "redis" && P[j] == P[i]) { a = j; break }
      if (!b || !a || x[i] == "failed" || x[b] == "failed" || x[a] == "failed") { printf "| %s | %s | | %s | | %s | %s |\n", t[i], P[i], x[i], e[i], l[i]; continue }
      red = (x[b] + x[a]) / 2
      split(t[i], ns, "x")
      printf "| %s × %s | %s | %.0f (%.0f/%.0f ms) | %.0f (%.0f ms) | %.2f× | %s | %s–%s |\n",
        ns[1], ns[2], P[i], red, p99[b], p99[a], x[i], p99[i], x[i] / red, e[i], l[b], l[a]
    }
  }' "$tmp/rows"
