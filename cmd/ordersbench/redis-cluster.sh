#!/bin/bash
# raftstream clusters against Redis Cluster on this machine, in the same run,
# through the same cluster client (ordersbench -cluster: go-redis
# ClusterClient, 50 producers, orders:{0..15}).
#
# Each configuration in $SETS is started fresh, measured and stopped, in
# that order, $ROUNDS times over (so Redis and raftstream rounds interleave):
#   redis:3xR       Redis Cluster, 3 masters × R replicas, every instance
#                   --appendonly yes --appendfsync always, formed with
#                   redis-cli --cluster create --cluster-replicas R
#   raftstream:NxS  raftstream, N nodes × S shards (replication factor
#                   min(3, N)), measured once its shard leaders are spread;
#                   raftstream:N, N nodes as started by default (the shard
#                   policy fits the shard count to this host's CPUs);
#                   raftstream:NxS:VAR=v[,VAR=v] starts its nodes with those
#                   environment variables (RAFTSTREAM_RAFT_BUS=off: each
#                   shard group's AppendEntries on its own connections)
# At every pipeline depth in $PIPELINES, ordersbench produces for $DUR (no
# consumers); then, unless DRAIN_N is 0, it produces DRAIN_N orders and 4
# consumers of one group drain them (XREADGROUP COUNT 100, pipelined XACK,
# -verify). Per row: XADD/s, p50, p99, errors, and over every server process
# of the cluster (/proc/<pid>/stat, /proc/<pid>/task/*/status): CPU µs and
# context switches per acknowledged XADD; for raftstream, from INFO summed
# over the nodes, node log writes (each one write + one fdatasync) and Raft
# AppendEntries RPCs and bytes sent per acknowledged XADD, and the parts of
# an XADD's path: commands per log entry, the mean time from proposing an
# entry to its applied result (raft_commit_usec), the mean node log write
# (write + fdatasync) and the mean server time of an XADD (commandstats:
# from its parse to its reply, so the entry's commit plus the wait for a
# batch). The 1-, 5- and
# 15-minute load averages are printed with every row: on a shared machine
# compare CPU per XADD first.
#
# Usage: cmd/ordersbench/redis-cluster.sh
# Env: SETS (default "redis:3x2 raftstream:3 raftstream:3x3 redis:3x1"),
#      ROUNDS (2), DUR (10s), PIPELINES ("16 1"), DRAIN_N (100000).
# raftstream and ordersbench are built from this tree into a temp dir, where
# every server runs on free loopback ports; servers are stopped by PID and
# the temp dir is removed at exit. Rows go to stdout as they are measured,
# then the medians over the rounds with each set's ratio to the first set
# (within each round).
set -u
sets=${SETS:-redis:3x2 raftstream:3 raftstream:3x3 redis:3x1}
rounds=${ROUNDS:-2} dur=${DUR:-10s} pipelines=${PIPELINES:-16 1} drain_n=${DRAIN_N:-100000}
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

# rs_sum expr: the number sed -n expr prints from INFO all, summed over
# the raftstream nodes in $addr.
rs_sum() {
  local a s=0 v
  for a in ${addr//,/ }; do
    v=$(redis-cli -p "${a##*:}" info all 2>/dev/null | tr -d '\r' | sed -n "$1")
    s=$((s + ${v:-0}))
  done
  echo "$s"
}

# rs_info field: the INFO field summed over the nodes.
rs_info() { rs_sum "s/^$1://p"; }

# appends_sent: the AppendEntries requests the nodes sent: raft's, less
# those an early request answered, plus the early ones.
appends_sent() { echo $(($(rs_info raft_append_rpcs) - $(rs_info raft_bus_early_answered) + $(rs_info raft_bus_early_sent))); }

# xadd_usec: the server time of XADD (INFO commandstats' usec) summed over
# the nodes.
xadd_usec() { rs_sum 's/^cmdstat_xadd:.*,usec=\([0-9]*\),.*/\1/p'; }

# counters kind: "ticks csw logwrites rpcs rpcbytes logwrite_usec proposed
# entry_cmds committed commit_usec xadd_usec" of the running cluster (the
# last six time the critical path's parts; 0 for Redis).
counters() {
  if [ "$1" = raftstream ]; then
    echo "$(pid_ticks "${nodepids[@]}") $(pid_csw "${nodepids[@]}") $(rs_info raft_log_writes) $(appends_sent) $(rs_info raft_bus_sent_bytes)" \
      "$(rs_info raft_log_write_usec) $(rs_info raft_entries_proposed) $(rs_info raft_entry_commands) $(rs_info raft_entries_committed) $(rs_info raft_commit_usec)" \
      "$(xadd_usec)"
  else
    echo "$(pid_ticks "${nodepids[@]}") $(pid_csw "${nodepids[@]}") 0 0 0 0 0 0 0 0 0"
  fi
}

# measure round set kind label P args...: one ordersbench run at -P P with
# the counters around it; appends the row (labelled label) to $tmp/rows and
# prints it.
measure() {
  local round=$1 set=$2 kind=$3 label=$4 P=$5 c0 c1 row
  shift 5
  read -r -a c0 < <(counters "$kind")
  row=$(ob_row "$set-$label" "$P" "$@")
  read -r -a c1 < <(counters "$kind")
  awk -v r="$round" -v set="$set" -v label="$label" -v row="$row" -v hz="$(getconf CLK_TCK)" -v l="$(loadavg)" -v kind="$kind" \
    -v t="$((c1[0] - c0[0]))" -v cs="$((c1[1] - c0[1]))" -v w="$((c1[2] - c0[2]))" -v rpc="$((c1[3] - c0[3]))" -v by="$((c1[4] - c0[4]))" \
    -v wu="$((c1[5] - c0[5]))" -v ep="$((c1[6] - c0[6]))" -v ec="$((c1[7] - c0[7]))" -v en="$((c1[8] - c0[8]))" -v cu="$((c1[9] - c0[9]))" \
    -v xu="$((c1[10] - c0[10]))" '
    BEGIN {
      split(row, f, " "); n = f[9]
      # set P xadd/s p50 p99 errors consumed/s verify
      printf "%s %s %s %s %s %s %s %s %s ", r, set, label, f[3], f[8], f[4], f[5], f[6], f[7]
      if (n > 0) printf "%.1f %.2f ", t * 1e6 / hz / n, cs / n; else printf "- - "
      if (n > 0 && kind == "raftstream") printf "%.3f %.3f %.0f ", w / n, rpc / n, by / n; else printf "- - - "
      # commands per entry, ms per entry commit, ms per log write, server ms per XADD
      if (n > 0 && kind == "raftstream" && ep > 0 && en > 0 && w > 0) printf "%.1f %.2f %.2f %.2f ", ec / ep, cu / en / 1000, wu / w / 1000, xu / n / 1000; else printf "- - - - "
      print l
    }' | tee -a "$tmp/rows"
}

echo "# round set P XADD/s p50_ms p99_ms errors consumed/s verify cpu_us/xadd csw/xadd logwrites/xadd rpcs/xadd rpcbytes/xadd cmds/entry commit_ms logwrite_ms server_ms/xadd load1/5/15"
for round in $(seq "$rounds"); do
  for s in $sets; do
    kind=${s%%:*} shape=${s#*:} envs=
    if [[ $shape == *:* ]]; then envs=${shape#*:} shape=${shape%%:*}; fi
    case $kind in
    redis) with_env "$envs" start_redis_cluster "${shape#3x}" ;;
    raftstream) if [[ $shape == *x* ]]; then with_env "$envs" start_raftstream "${shape%x*}" "${shape#*x}"; else with_env "$envs" start_raftstream "$shape"; fi ;;
    *) echo "unknown set $s (want redis:3xR, raftstream:N or raftstream:NxS[:VAR=v,...])" >&2; exit 2 ;;
    esac
    for P in $pipelines; do
      measure "$round" "$s" "$kind" "$P" "$P" -consumers 0 -duration "$dur"
    done
    if [ "$drain_n" -gt 0 ]; then
      measure "$round" "$s" "$kind" drain 16 -count "$drain_n" -groups billing -consumers 4 -consume-after -verify -drain-timeout 300s
    fi
    stop_nodes
  done
done

echo
awk -v base="${sets%% *}" '
  function median(a, n,   i, j, t) {
    for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
    return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2
  }
  /^#/ { next }
  {
    k = $2 SUBSEP $3
    if (!(k in seen)) { seen[k]; order[++nk] = k }
    v = ($3 == "drain") ? $8 : $4
    val[$1, k] = v; rows[k] = rows[k] " " $1
    p50[k, ++np50[k]] = $5; p99[k, np50[k]] = $6; cpu[k, np50[k]] = $10; csw[k, np50[k]] = $11
    lw[k, np50[k]] = $12; rpc[k, np50[k]] = $13; by[k, np50[k]] = $14
    ce[k, np50[k]] = $15; cm[k, np50[k]] = $16; wm[k, np50[k]] = $17; sm[k, np50[k]] = $18
    ld[k] = ld[k] (ld[k] == "" ? "" : ",") substr($19, 1, index($19, "/") - 1)
    rounds[$1]
  }
  function med(arr, k, n,   i, a, m) { m = 0; for (i = 1; i <= n; i++) if (arr[k, i] != "-" && arr[k, i] != "") a[++m] = arr[k, i]; return m ? median(a, m) : "-" }
  END {
    print "| set | P | XADD/s (drain: consumed/s) | ratio to " base " | p50 ms | p99 ms | CPU µs/XADD | csw/XADD | log writes/XADD | AppendEntries/XADD | bytes/XADD | commands/entry | entry commit ms | log write ms | server ms/XADD | load1 |"
    print "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    for (i = 1; i <= nk; i++) {
      k = order[i]; split(k, kp, SUBSEP); n = np50[k]
      m = 0; mr = 0
      for (r in rounds) {
        if (!((r, k) in val) || val[r, k] == "failed") continue
        a[++m] = val[r, k]
        bk = base SUBSEP kp[2]
        if ((r, bk) in val && val[r, bk] > 0) rr[++mr] = val[r, k] / val[r, bk]
      }
      printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", kp[1], kp[2],
        m ? sprintf("%.0f", median(a, m)) : "failed", mr ? sprintf("%.2f×", median(rr, mr)) : "-",
        med(p50, k, n), med(p99, k, n), med(cpu, k, n), med(csw, k, n), med(lw, k, n), med(rpc, k, n), med(by, k, n),
        med(ce, k, n), med(cm, k, n), med(wm, k, n), med(sm, k, n), ld[k]
      delete a; delete rr
    }
  }' "$tmp/rows"
