#!/bin/bash
# One raftstream node against redis-server --appendonly yes --appendfsync
# always, on this machine, in the same run. Sections:
#
#   xadd    redis-benchmark -c 50 XADD at -P 16 ($N16 commands) and -P 1 ($N1),
#           on both servers in turn, $ROUNDS rounds; per row XADD/s, p99,
#           the server's CPU per XADD (user + system, /proc/<pid>/stat),
#           context switches per XADD (every thread, /proc/<pid>/task/*/status),
#           redis-benchmark's own CPU per XADD and the host's busy CPUs (the
#           client shares them), then the medians and the node's ratios to
#           Redis within each round.
#           Each VAR=v[,VAR=v] word of $VARIANTS adds a node started with
#           those environment variables (a row "raftstream:VAR=v"), e.g.
#           VARIANTS=GOMAXPROCS=1.
#   drain   ordersbench produces a backlog of $DRAIN_N orders, then 4
#           consumers of one group drain it (XREADGROUP COUNT 100, pipelined
#           XACK, -verify): consumed/s, on a fresh server each.
#   memory  $RSS_N order entries sent with redis-cli --pipe to a fresh server
#           each: MEMORY USAGE of the stream and the process's VmRSS.
#   floor   the -P 1 rows of xadd ($N1 commands, $ROUNDS rounds) for
#           redis-server, the node, and cmd/ordersbench/floor in nine
#           variants. With a goroutine per connection: batch (one batcher,
#           one write and fdatasync per batch), nosync (without the
#           fdatasync), sleep (a 350 us sleep instead of the write),
#           batch-reply (the batcher writes the replies), batch-pre (the
#           log zero-filled first and overwritten) and direct (no write).
#           Without: epoll (redis-server's event loop in Go), epoll-overlap
#           (a second goroutine syncs while the loop reads) and epoll-pre.
#           What a Go server of each shape spends per durable XADD before
#           Raft and the engine.
#
# Usage: cmd/ordersbench/single-node.sh [section...]   (default: xadd drain memory)
# Env: ROUNDS (3), N16 (200000), N1 (100000), DRAIN_N (200000), RSS_N (1000000),
#      VARIANTS (none).
# raftstream and ordersbench are built from this tree into a temp dir, where
# every server runs on free loopback ports; servers are stopped by PID and
# the temp dir is removed at exit. Results go to stdout.
set -u
sections=${*:-xadd drain memory}
rounds=${ROUNDS:-3} n16=${N16:-200000} n1=${N1:-100000} drain_n=${DRAIN_N:-200000}
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

# median_awk is an awk function: the median of a[1..n] (sorts a).
median_awk='
    function median(a, n,   i, j, t) {
      for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
      return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2
    }'

# xadd_row round name port pid P n: redis-benchmark -c 50 -P P, n XADDs,
# against the server on port (process pid), as the row "round name P XADD/s
# p99_ms cpu_us_per_xadd csw_per_xadd load1 client_us_per_xadd busy_cpus":
# the server's CPU and context switches, then redis-benchmark's own CPU per
# XADD (user + system, from bash's time) and how many of the host's CPUs
# were busy on average (/proc/stat) while it ran. The client runs on the
# same CPUs as the server.
xadd_row() {
  local c0 s0 c1 s1 h0 h1 res TIMEFORMAT='%3U %3S'
  c0=$(pid_ticks "$4") s0=$(pid_csw "$4") h0=$(host_ticks)
  { time redis-benchmark -p "$3" -c 50 -P "$5" -n "$6" --csv XADD "s$5" '*' f v >"$tmp/bench.out" 2>&1; } 2>"$tmp/bench.time"
  res=$(tail -1 "$tmp/bench.out" | tr -d '"' | awk -F, '{print $2, $7}')
  c1=$(pid_ticks "$4") s1=$(pid_csw "$4") h1=$(host_ticks)
  echo "$1 $2 $5 $res $(cpu_us $((c1 - c0)) "$6") $(awk -v s=$((s1 - s0)) -v n="$6" 'BEGIN { printf "%.3f", s / n }') $(load1)" \
    "$(awk -v n="$6" '{ printf "%.1f", ($1 + $2) * 1e6 / n }' "$tmp/bench.time")" \
    "$(awk -v a="$h0" -v b="$h1" -v cpus="$(nproc)" 'BEGIN { split(a, x); split(b, y); t = y[1] - x[1]; printf "%.2f", (t > 0 ? cpus * (y[2] - x[2]) / t : 0) }')"
}

# host_ticks prints "all busy" clock ticks of the host's CPUs so far, from
# /proc/stat: busy is everything but idle and iowait.
host_ticks() { awk '$1 == "cpu" { t = 0; for (i = 2; i <= 9; i++) t += $i; print t, t - $5 - $6; exit }' /proc/stat; }

# ratio_summary: reads xadd_row's rows and prints, per P and per node (each
# target but redis), the medians of the node and of redis-server and of the
# node's per-round ratios.
ratio_summary() {
  awk "$median_awk"'
    { k = $1 SUBSEP $3; rps[k, $2] = $4; p99[k, $2] = $5; cpu[k, $2] = $6; csw[k, $2] = $7; ccpu[k, $2] = $9; busy[k, $2] = $10
      if (!($3 in seen)) { seen[$3]; ps[++np] = $3 }
      if (!($2 in named) && $2 != "redis") { named[$2]; names[++nn] = $2 }
      if (!(($1) in r)) { r[$1]; nr++ } }
    END {
      for (i = 1; i <= np; i++) for (j = 1; j <= nn; j++) {
        P = ps[i]; s = names[j]; n = 0
        for (round = 1; round <= nr; round++) {
          k = round SUBSEP P
          if (!((k, "redis") in rps) || !((k, s) in rps) || rps[k, "redis"] == 0) continue
          n++
          rr[n] = rps[k, s] / rps[k, "redis"]; lo = (n == 1 || rr[n] < lo) ? rr[n] : lo; hi = (n == 1 || rr[n] > hi) ? rr[n] : hi
          pr[n] = p99[k, "redis"] > 0 ? p99[k, s] / p99[k, "redis"] : 0
          a[n] = rps[k, s]; b[n] = rps[k, "redis"]; c[n] = cpu[k, s]; d[n] = cpu[k, "redis"]
          e[n] = csw[k, s]; f[n] = csw[k, "redis"]; g[n] = ccpu[k, s]; h[n] = ccpu[k, "redis"]; u[n] = busy[k, s]; v[n] = busy[k, "redis"]
        }
        if (n == 0) continue
        printf "-P %-2s %s%sXADD/s %.0f against %.0f: %.2fx (%.2f-%.2f); p99 %.2fx; CPU %.1f against %.1f us per XADD; %.3f against %.3f context switches per XADD; client CPU %.1f against %.1f us per XADD; host CPUs busy %.2f against %.2f\n",
          P, (nn > 1 ? " " s : ""), (nn > 1 ? ": " : " "), median(a, n), median(b, n), median(rr, n), lo, hi, median(pr, n), median(c, n), median(d, n), median(e, n), median(f, n), median(g, n), median(h, n), median(u, n), median(v, n)
      }
    }'
}

for section in $sections; do
  case $section in
  xadd)
    start_redis; rport=$port rpid=$spid
    start_raftstream 1 1
    servers=("redis:$rport:$rpid" "raftstream:$port:$spid")
    for v in ${VARIANTS:-}; do
      with_env "$v" start_raftstream 1 1
      servers+=("raftstream:$v:$port:$spid")
    done
    echo "# round server P XADD/s p99_ms cpu_us_per_xadd csw_per_xadd load1 client_us_per_xadd busy_cpus"
    for r in $(seq "$rounds"); do
      for P in 16 1; do
        n=$n16; [ "$P" = 1 ] && n=$n1
        for t in "${servers[@]}"; do
          name=${t%:*:*} p=${t%:*} p=${p##*:} pid=${t##*:}
          xadd_row "$r" "$name" "$p" "$pid" "$P" "$n"
        done
      done
    done | tee "$tmp/xadd.rows"
    ratio_summary <"$tmp/xadd.rows"
    stop_pids ;;
  drain)
    echo "# server P consumed_per_s verify"
    for t in redis raftstream; do
      if [ "$t" = redis ]; then start_redis; else start_raftstream 1 1; fi
      ob_row "drain-$t" 16 -count "$drain_n" -groups billing -consumers 4 -consume-after -verify -drain-timeout 300s |
        awk '{print $1, $2, $6, $7}' | tee -a "$tmp/drain.rows"
      stop_pids
    done
    awk '{c[$1] = $3} END { if (c["drain-redis"] > 0) printf "drain: %.2fx Redis\n", c["drain-raftstream"] / c["drain-redis"] }' "$tmp/drain.rows" ;;
  memory)
    # XADD s <i>-0 customer c<7 digits> amount <5 digits> sku SKU-<6 digits>,
    # the uniform entries of the engine's BenchmarkRedisMemoryRatio.
    awk -v n="${RSS_N:-1000000}" 'function arg(s) { printf "$%d\r\n%s\r\n", length(s), s }
      BEGIN { for (i = 0; i < n; i++) {
        printf "*9\r\n"; arg("XADD"); arg("s"); arg((i + 1) "-0")
        arg("customer"); arg(sprintf("c%07d", i % 10000000)); arg("amount"); arg(sprintf("%05d", 10000 + i % 90000))
        arg("sku"); arg(sprintf("SKU-%06d", i % 1000000)) } }' >"$tmp/fill.resp"
    echo "# server entries memory_usage_bytes vmrss_kb"
    for t in redis raftstream; do
      if [ "$t" = redis ]; then start_redis; else start_raftstream 1 1; fi
      redis-cli -p "$port" --pipe <"$tmp/fill.resp" >"$tmp/pipe-$t.txt" 2>&1
      sleep 2
      echo "$t $(redis-cli -p "$port" xlen s) $(redis-cli -p "$port" memory usage s samples 0) $(awk '/^VmRSS/ {print $2}' /proc/"$spid"/status)" |
        tee -a "$tmp/memory.rows"
      stop_pids
    done
    awk '{m[$1] = $3; r[$1] = $4} END { if (m["redis"] > 0 && r["redis"] > 0)
      printf "memory: MEMORY USAGE %.2fx Redis, VmRSS %.2fx\n", m["raftstream"] / m["redis"], r["raftstream"] / r["redis"] }' "$tmp/memory.rows" ;;
  floor)
    (cd "$(dirname "$0")/../.." && go build -o "$tmp/floor" ./cmd/ordersbench/floor) || exit 1
    start_redis; rport=$port rpid=$spid
    servers=(redis:$rport:$rpid)
    for v in "direct:-mode direct" "batch:-mode batch" "nosync:-mode batch -fsync=false" \
      "sleep:-mode batch -sleep 350us" "batch-reply:-mode batch-reply" "batch-pre:-mode batch -prealloc 67108864" \
      "epoll:-mode epoll" "epoll-overlap:-mode epoll -overlap" "epoll-pre:-mode epoll -prealloc 67108864"; do
      read -r p < <(freeports 1)
      # shellcheck disable=SC2086 # the variant's flags are words
      "$tmp/floor" -addr "127.0.0.1:$p" ${v#*:} -dir "$tmp" 2>"$tmp/floor-${v%%:*}.log" &
      pids+=($!)
      servers+=("floor-${v%%:*}:$p:$!")
      wait_until 100 bash -c "exec 3<>/dev/tcp/127.0.0.1/$p" 2>/dev/null || { echo "floor ${v%%:*} did not start" >&2; exit 1; }
    done
    start_raftstream 1 1
    servers+=("raftstream:$port:$spid")
    echo "# round server P XADD/s p99_ms cpu_us_per_xadd csw_per_xadd load1 client_us_per_xadd busy_cpus"
    for r in $(seq "$rounds"); do
      for t in "${servers[@]}"; do
        IFS=: read -r name p pid <<<"$t"
        xadd_row "$r" "$name" "$p" "$pid" 1 "$n1"
      done
    done | tee "$tmp/floor.rows"
    # Per server: the median of its per-round XADD/s ratios to redis-server,
    # its median CPU and context switches per XADD.
    awk "$median_awk"'
      { rps[$1, $2] = $4; cpu[$1, $2] = $6; csw[$1, $2] = $7; if (!($2 in seen)) { seen[$2]; names[++ns] = $2 }; if (!($1 in r)) { r[$1]; nr++ } }
      END {
        for (i = 1; i <= ns; i++) {
          m = 0
          for (round = 1; round <= nr; round++) {
            if (!((round, names[i]) in rps) || rps[round, "redis"] == 0) continue
            m++; q[m] = rps[round, names[i]] / rps[round, "redis"]; c[m] = cpu[round, names[i]]; w[m] = csw[round, names[i]]
          }
          if (m > 0) printf "-P 1  %-17s %.2fx redis-server'"'"'s XADD/s, %.1f CPU us and %.3f context switches per XADD\n", names[i], median(q, m), median(c, m), median(w, m)
        }
      }' "$tmp/floor.rows"
    stop_pids ;;
  *) echo "unknown section $section (want xadd, drain, memory or floor)" >&2; exit 2 ;;
  esac
done
