#!/bin/bash
# What the connection model costs: XADD with redis-benchmark (50 clients,
# -P 1 by default) against redis-server (AOF always), the three models of
# the minimal durable server in floor/ (goroutine, burst, eventloop) and a
# raftstream node, interleaved round after round. Every row is compared with
# the Redis row of the same round; the summary gives medians over the rounds.
# Usage: cmd/ordersbench/floor-bench.sh RAFTSTREAM_BINARY [N] [ROUNDS] [P]
# Row format: round,target,P,rps,p99_ms,cpu_us_per_xadd,load1
set -u
rs=${1:?raftstream binary}; n=${2:-100000}; rounds=${3:-3}; P=${4:-1}
here=$(cd "$(dirname "$0")" && pwd)
d=$(mktemp -d)
# shellcheck source=ports.sh
. "$here/ports.sh"
(cd "$here/../.." && go build -o "$d/floor" ./cmd/ordersbench/floor) || exit 1
models="goroutine burst eventloop"
read -ra ports < <(freeports 6)
pids=()
trap 'stop_pids; rm -rf "$d"' EXIT
redis-server --port "${ports[0]}" --bind 127.0.0.1 --dir "$d" --save '' --appendonly yes --appendfsync always --daemonize no --logfile "$d/redis.log" &
pids+=($!); targets="redis:${ports[0]}:$!"
k=1
for m in $models; do
  "$d/floor" -addr "127.0.0.1:${ports[k]}" -file "$d/$m.log" -model "$m" 2>"$d/$m.err" &
  pids+=($!); targets="$targets $m:${ports[k]}:$!"; k=$((k + 1))
done
"$rs" -port "${ports[4]}" -cluster-port "${ports[5]}" -dir "$d/rs" -log-level warn >"$d/rs.log" 2>&1 &
pids+=($!); targets="$targets raftstream:${ports[4]}:$!"
for t in $targets; do
  IFS=: read -r name p _ <<<"$t"
  for _ in $(seq 400); do redis-cli -p "$p" ping 2>/dev/null | grep -q . && break; sleep 0.1; done
done
tick_ns=$((1000000000 / $(getconf CLK_TCK)))
for r in $(seq "$rounds"); do
  for t in $targets; do
    IFS=: read -r name port pid <<<"$t"
    c0=$(pid_ticks "$pid")
    res=$(redis-benchmark -p "$port" -c 50 -P "$P" -n "$n" --csv XADD s '*' f v 2>&1 | tail -1 | cut -d, -f2,7 | tr -d '"')
    c1=$(pid_ticks "$pid")
    echo "$r,$name,$P,$res,$(( (c1 - c0) * tick_ns / n / 1000 )).$(( (c1 - c0) * tick_ns / n / 100 % 10 )),$(cut -d' ' -f1 /proc/loadavg)"
  done
done | tee "$d/rows.csv"
python3 - "$d/rows.csv" $models raftstream <<'PY'
import csv, statistics as st, sys
rows = list(csv.reader(open(sys.argv[1])))
by = {(r[0], r[1]): r for r in rows}
red = [float(r[5]) for r in rows if r[1] == "redis"]
print(f"redis       CPU {st.median(red):.1f} us/XADD, XADD/s median {st.median(float(r[3]) for r in rows if r[1] == 'redis'):,.0f}")
for name in sys.argv[2:]:
    mine = [r for r in rows if r[1] == name]
    rat = [float(r[3]) / float(by[(r[0], "redis")][3]) for r in mine]
    cpu = [float(r[5]) for r in mine]
    print(f"{name:10s}  CPU {st.median(cpu):.1f} us/XADD, XADD/s ratio median {st.median(rat):.2f} (range {min(rat):.2f}-{max(rat):.2f})")
PY
