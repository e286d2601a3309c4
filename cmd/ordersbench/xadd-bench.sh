#!/bin/bash
# XADD throughput, p99 and server CPU per XADD with redis-benchmark (50
# clients, -P 16 and -P 1), interleaved round after round: redis-server AOF
# always, raftstream 1 node with the bbolt log store, raftstream 1 node with
# the node log store (fsm/nodelog; STORES="bolt node wal" adds raft-wal). Every row is compared with the Redis row of the
# same round; the summary gives the median over the rounds.
# Usage: cmd/ordersbench/xadd-bench.sh RAFTSTREAM_BINARY [N_P16] [N_P1] [ROUNDS]
# Row format: round,target,P,rps,p99_ms,cpu_us_per_xadd,load1
set -u
rs=${1:?raftstream binary}; n=${2:-200000}; n1=${3:-30000}; rounds=${4:-1}
d=$(mktemp -d)
# shellcheck source=ports.sh
. "$(dirname "$0")/ports.sh"
cpu_ticks() { awk '{print $14+$15}' /proc/"$1"/stat; }
stores=${STORES:-bolt node}
read -ra ports < <(freeports $((1 + 2 * $(wc -w <<<"$stores"))))
rp=${ports[0]}; k=1
redis-server --port "$rp" --bind 127.0.0.1 --dir "$d" --save '' --appendonly yes --appendfsync always --daemonize no --logfile "$d/redis.log" &
pids=$!
targets="redis:$rp:$!"
for s in $stores; do
  sp=${ports[k]}; bp=${ports[k+1]}; k=$((k + 2))
  RAFTSTREAM_RAFT_LOG_STORE=$s "$rs" -port "$sp" -cluster-port "$bp" -dir "$d/$s" -log-level warn >"$d/$s.log" 2>&1 &
  pids="$pids $!"
  targets="$targets $s:$sp:$!"
done
# shellcheck disable=SC2086
trap 'kill $pids 2>/dev/null; wait $pids 2>/dev/null; rm -rf "$d"' EXIT
for t in $targets; do
  IFS=: read -r _ p _ <<<"$t"
  for _ in $(seq 400); do redis-cli -p "$p" ping 2>/dev/null | grep -q PONG && break; sleep 0.1; done
done
for s in $stores; do echo "$s: $(ls "$d/$s/shards/0" | tr '\n' ' ')"; done
tick_ns=$((1000000000 / $(getconf CLK_TCK)))
for r in $(seq "$rounds"); do
  for P in 16 1; do
    N=$n; [ "$P" = 1 ] && N=$n1
    for t in $targets; do
      IFS=: read -r name port pid <<<"$t"
      c0=$(cpu_ticks "$pid")
      res=$(redis-benchmark -p "$port" -c 50 -P "$P" -n "$N" --csv XADD "s$P" '*' f v 2>&1 | tail -1 | cut -d, -f2,7 | tr -d '"')
      c1=$(cpu_ticks "$pid")
      echo "$r,$name,$P,$res,$(( (c1 - c0) * tick_ns / N / 1000 )).$(( (c1 - c0) * tick_ns / N / 100 % 10 )),$(cut -d' ' -f1 /proc/loadavg)"
    done
  done
done | tee "$d/rows.csv"
python3 - "$d/rows.csv" redis $stores <<'EOF'
import csv, statistics as st, sys
rows = list(csv.reader(open(sys.argv[1])))
by = {(r[0], r[1], r[2]): r for r in rows}
for P in ("16", "1"):
    for name in sys.argv[2:]:
        mine = [r for r in rows if r[1] == name and r[2] == P]
        rat = [float(r[3]) / float(by[(r[0], "redis", P)][3]) for r in mine]
        p99 = [float(r[4]) / float(by[(r[0], "redis", P)][4]) for r in mine]
        cpu = [float(r[5]) for r in mine]
        rps = [float(r[3]) for r in mine]
        loads = [float(r[6]) for r in mine]
        print(f"P{P} {name:5s} XADD/s median {st.median(rps):,.0f}  ratio median {st.median(rat):.2f} "
              f"(range {min(rat):.2f}-{max(rat):.2f})  p99 ratio median {st.median(p99):.2f}  "
              f"CPU {st.median(cpu):.1f} us/XADD  load {min(loads):.1f}-{max(loads):.1f}")
EOF
