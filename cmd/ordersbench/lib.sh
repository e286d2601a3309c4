# Sourced by single-node.sh and redis-cluster.sh: start servers on free
# loopback ports in a temp dir, stop them by PID, read CPU time from /proc.
# Sourcing it builds raftstream ($rs) and ordersbench ($ob) from this tree
# into $tmp, a new temp dir; at exit every server in pids is stopped and
# $tmp removed.

# freeports n prints n distinct loopback ports with nothing listening on them,
# below the kernel's ephemeral range (32768+), so that no outgoing connection
# takes a port between this check and the server binding it.
freeports() {
  local out=() p q dup
  while [ ${#out[@]} -lt "$1" ]; do
    p=$((10000 + RANDOM % 22000)) dup=0
    for q in "${out[@]}"; do [ "$q" = "$p" ] && dup=1; done
    [ "$dup" = 1 ] && continue
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null && continue
    out+=("$p")
  done
  echo "${out[@]}"
}

# pid_ticks pid... prints the CPU time (user + system, in clock ticks) the
# processes have used so far.
pid_ticks() {
  local s=0 p
  for p in "$@"; do s=$((s + $(awk '{print $14+$15}' /proc/"$p"/stat))); done
  echo "$s"
}

# pid_csw pid... prints the context switches (voluntary and involuntary,
# every thread) the processes have made so far.
pid_csw() {
  local p
  for p in "$@"; do cat /proc/"$p"/task/*/status 2>/dev/null; done |
    awk '/^(non)?voluntary_ctxt_switches:/ { s += $2 } END { print s + 0 }'
}

# cpu_us ticks n prints ticks of CPU time as microseconds per operation.
cpu_us() { awk -v t="$1" -v n="$2" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.1f", (n > 0 ? t * 1e6 / hz / n : 0) }'; }

load1() { cut -d' ' -f1 /proc/loadavg; }
loadavg() { cut -d' ' -f1-3 /proc/loadavg | tr ' ' /; }

# stop_pids stops the processes in the caller's pids array by PID, waits for
# them and empties the array.
stop_pids() {
  if [ ${#pids[@]} -gt 0 ]; then
    kill "${pids[@]}" 2>/dev/null
    wait "${pids[@]}" 2>/dev/null
  fi
  pids=()
}

# with_env VAR=v[,VAR=v] command...: runs command (a function of these
# scripts, so that the variables it sets stay) with those environment
# variables exported, then unsets them.
with_env() {
  local envs=$1 e
  shift
  for e in ${envs//,/ }; do export "${e?}"; done
  "$@"
  for e in ${envs//,/ }; do unset "${e%%=*}"; done
}

# wait_until tries command...: runs command every 0.1 s until it succeeds.
wait_until() {
  local n=$1 i
  shift
  for ((i = 0; i < n; i++)); do "$@" && return 0; sleep 0.1; done
  return 1
}

pong() { redis-cli -p "$1" ping 2>/dev/null | grep -q PONG; }
cluster_ok() { redis-cli -p "$1" cluster info 2>/dev/null | grep -q cluster_state:ok; }
redis_is() { [ "$(redis-cli -p "$1" info server 2>/dev/null | tr -d '\r' | sed -n 's/^process_id://p')" = "$2" ]; }

# start_redis starts redis-server --appendonly yes --appendfsync always and
# sets port, spid and addr.
start_redis() {
  local dir
  dir=$(mktemp -d "$tmp/redis.XXXX")
  read -r port < <(freeports 1)
  redis-server --port "$port" --bind 127.0.0.1 --dir "$dir" --save '' --appendonly yes \
    --appendfsync always --daemonize no --logfile "$dir/redis.log" &
  spid=$!
  pids+=("$spid")
  wait_until 100 redis_is "$port" "$spid" || { echo "redis-server did not start" >&2; exit 1; }
  addr=127.0.0.1:$port
}

# start_redis_cluster R starts a Redis Cluster of 3 masters with R replicas
# each (redis-server --cluster-enabled yes --appendonly yes --appendfsync
# always, client and bus ports from freeports), forms it with redis-cli
# --cluster create --cluster-replicas R --cluster-yes, waits until every
# instance reports cluster_state:ok and every replica's link to its master
# is up, and sets port (the first instance), spid, nodepids and addr (every
# instance, comma-separated), as start_raftstream does.
start_redis_cluster() {
  local r=$1 n=$((3 * (1 + $1))) dir i ports nodes=()
  dir=$(mktemp -d "$tmp/rcluster.XXXX")
  read -r -a ports < <(freeports $((2 * n)))
  nodepids=() addr=""
  for ((i = 0; i < n; i++)); do
    mkdir -p "$dir/n$i"
    redis-server --port "${ports[i]}" --cluster-port "${ports[n + i]}" --bind 127.0.0.1 --dir "$dir/n$i" \
      --save '' --appendonly yes --appendfsync always --cluster-enabled yes --cluster-config-file nodes.conf \
      --daemonize no --logfile "$dir/n$i/redis.log" &
    pids+=($!)
    nodepids+=($!)
    nodes+=("127.0.0.1:${ports[i]}")
    addr+="${addr:+,}127.0.0.1:${ports[i]}"
  done
  for ((i = 0; i < n; i++)); do
    wait_until 100 redis_is "${ports[i]}" "${nodepids[i]}" || { echo "redis-server did not start" >&2; exit 1; }
  done
  redis-cli --cluster create "${nodes[@]}" --cluster-replicas "$r" --cluster-yes >"$dir/create.log" 2>&1 ||
    { echo "redis-cli --cluster create failed:" >&2; tail -5 "$dir/create.log" >&2; exit 1; }
  for ((i = 0; i < n; i++)); do
    wait_until 300 cluster_ok "${ports[i]}" || { echo "Redis Cluster 3x$r did not form" >&2; exit 1; }
  done
  for ((i = 0; i < n; i++)); do
    wait_until 300 replica_linked "${ports[i]}" || { echo "Redis Cluster 3x$r: a replica did not sync" >&2; exit 1; }
  done
  port=${ports[0]} spid=${nodepids[0]}
}

# replica_linked port: the instance is a master, or a replica whose link to
# its master is up.
replica_linked() {
  local info
  info=$(redis-cli -p "$1" info replication 2>/dev/null | tr -d '\r')
  grep -q '^role:master' <<<"$info" || grep -q '^master_link_status:up' <<<"$info"
}

# stop_nodes stops the processes in nodepids (one cluster) by PID, waits for
# them and takes them out of pids.
stop_nodes() {
  local p q keep=()
  kill "${nodepids[@]}" 2>/dev/null
  for p in "${nodepids[@]}"; do wait "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do
    for q in "${nodepids[@]}"; do [ "$p" = "$q" ] && continue 2; done
    keep+=("$p")
  done
  pids=("${keep[@]}")
  nodepids=()
}

# start_raftstream NODES [SHARDS] starts a raftstream cluster (one node: no
# join) with the server's default replication factor, of SHARDS shards or,
# without it, the count the cluster picks (the default shard policy, which
# fits it to the host's CPUs), waits until it serves every slot with its
# shard leaders spread evenly, and sets port (node 0), spid (node 0's PID),
# nodepids and addr (every node, comma-separated).
start_raftstream() {
  local n=$1 s=${2:-} dir i ports join="" shards=()
  [ -n "$s" ] && shards=(-shards "$s")
  dir=$(mktemp -d "$tmp/raftstream.XXXX")
  read -r -a ports < <(freeports $((2 * n)))
  for ((i = 0; i < n; i++)); do join+="${join:+,}127.0.0.1:${ports[n + i]}"; done
  nodepids=() addr=""
  for ((i = 0; i < n; i++)); do
    if [ "$n" = 1 ]; then
      "$rs" -port "${ports[0]}" -cluster-port "${ports[1]}" "${shards[@]}" -dir "$dir/n0" -log-level warn >"$dir/log0" 2>&1 &
    else
      "$rs" -port "${ports[i]}" -cluster-port "${ports[n + i]}" "${shards[@]}" -dir "$dir/n$i" -bootstrap-expect "$n" \
        -join "$join" -node-name "n$i" -log-level warn >"$dir/log$i" 2>&1 &
    fi
    pids+=($!)
    nodepids+=($!)
    addr+="${addr:+,}127.0.0.1:${ports[i]}"
  done
  port=${ports[0]} spid=${nodepids[0]}
  wait_until 1800 cluster_ok "$port" || { echo "raftstream ${n}x$s did not start" >&2; tail -5 "$dir"/log*; exit 1; }
  [ -n "$s" ] || s=$(redis-cli -p "$port" info all | tr -d '\r' | sed -n 's/^raft_shards://p')
  wait_balanced "$port" "$s" 90 || echo "warning: raftstream ${n}x$s: leaders not spread evenly after 90 s" >&2
}

# build puts raftstream and ordersbench, built from this tree, in $tmp.
build() {
  local root
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
  (cd "$root" && go build -o "$tmp/raftstream" ./cmd/raftstream && go build -o "$tmp/ordersbench" ./cmd/ordersbench) || exit 1
  rs=$tmp/raftstream ob=$tmp/ordersbench
}

# ob_row target P args...: runs ordersbench (50 producers, -P P, -reset)
# against $addr and prints "target P xadd/s p99_ms errors consumed/s verify
# p50_ms produced", from its summary: the produce rate, the xadd row's p99,
# the first group's consumed/s, the xadd row's p50 and the orders
# acknowledged. The full output is kept in $tmp/target-P.txt.
ob_row() {
  local target=$1 P=$2 flags=()
  shift 2
  [[ $addr == *,* ]] && flags=(-cluster)
  "$ob" -addr "$addr" "${flags[@]}" -producers 50 -pipeline "$P" -reset -progress=false "$@" >"$tmp/$target-P$P.txt" 2>&1
  awk -v t="$target" -v P="$P" '
    function ms(s) { if (s ~ /ms$/) return s + 0; if (s ~ /µs$/) return s / 1000; if (s ~ /s$/) return s * 1000; return s }
    /^produced / { n = $2; rate = $4; sub(/^\(/, "", rate); sub(/\/s\),$/, "", rate); err = $5 }
    $1 == "xadd" { p50 = ms($5); p99 = ms($6) }
    /^group / && cons == "" { cons = $5; sub(/^\(/, "", cons); sub(/\/s\),$/, "", cons) }
    /^verify / { v = $2; sub(/:$/, "", v) }
    END { printf "%s %s %s %s %s %s %s %s %s\n", t, P, rate == "" ? "failed" : rate, p99 == "" ? "-" : p99, err == "" ? "-" : err, cons == "" ? "-" : cons, v == "" ? "-" : v, p50 == "" ? "-" : p50, n == "" ? 0 : n }' "$tmp/$target-P$P.txt"
}

# wait_balanced port shards [seconds] waits until CLUSTER NODES, asked on
# port, shows the shards' leaders spread evenly: every master node leads
# ⌊shards/nodes⌋ or ⌈shards/nodes⌉ shards. A cluster reports
# cluster_state:ok as soon as every shard has a leader; the balancer moves
# leaderships a few seconds later, and a run that starts before then measures
# the moves and an overloaded node. Returns 1 after seconds (default 60).
wait_balanced() {
  local port=$1 shards=$2 secs=${3:-60} i
  for ((i = 0; i < secs * 5; i++)); do
    redis-cli -p "$port" cluster nodes 2>/dev/null | awk -v s="$shards" '
      $3 ~ /master/ {
        n++; slots = 0
        for (f = 9; f <= NF; f++) {
          if ($f ~ /^\[/) continue
          k = split($f, r, "-"); slots += (k == 2 ? r[2] - r[1] + 1 : 1)
        }
        c = int(slots * s / 16384 + 0.5)
        if (n == 1 || c < lo) lo = c
        if (n == 1 || c > hi) hi = c
        tot += c
      }
      END { exit !(n > 0 && tot == s && hi - lo <= 1) }' && return 0
    sleep 0.2
  done
  return 1
}

tmp=$(mktemp -d)
pids=()
trap 'stop_pids; rm -rf "$tmp"' EXIT
build
