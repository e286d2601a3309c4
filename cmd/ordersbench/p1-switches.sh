#!/bin/bash
# Context switches, interrupts and server CPU per XADD at -P 1
# (redis-benchmark -c 50 -P 1 XADD s * f v): redis-server with AOF always,
# then a raftstream node, one after the other, $ROUNDS times.
# proc-cs: the server's voluntary + involuntary switches (all its threads);
# sys-cs and intr: the whole machine's (/proc/stat), so run it alone.
# Usage: cmd/ordersbench/p1-switches.sh RAFTSTREAM_BINARY [N] [ROUNDS]
# RS_ENV (e.g. "GOMAXPROCS=1") is put in the raftstream node's environment.
set -u
rs=${1:?raftstream binary}; n=${2:-100000}; rounds=${3:-1}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=ports.sh
. "$here/ports.sh"
d=$(mktemp -d); pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; rm -rf "$d"' EXIT
switches() { cat /proc/"$1"/task/*/status 2>/dev/null | awk '/ctxt_switches/ {s += $2} END {print s}'; }
procstat() { awk -v k="$1" '$1 == k {print $2}' /proc/stat; }
per() { echo "scale=2; $1 / $n" | bc; }
for r in $(seq "$rounds"); do
  for target in redis raftstream; do
    read -r -a ports < <(freeports 2)
    if [ "$target" = redis ]; then
      mkdir -p "$d/redis$r"
      redis-server --port "${ports[0]}" --bind 127.0.0.1 --dir "$d/redis$r" --save '' --appendonly yes \
        --appendfsync always --daemonize no --logfile "$d/redis.log" &
    else
      # shellcheck disable=SC2086
      env ${RS_ENV:-} "$rs" -port "${ports[0]}" -cluster-port "${ports[1]}" -dir "$d/rs$r" -log-level warn >"$d/rs.log" 2>&1 &
    fi
    pid=$!
    for _ in $(seq 400); do redis-cli -p "${ports[0]}" ping 2>/dev/null | grep -q PONG && break; sleep 0.1; done
    redis-benchmark -p "${ports[0]}" -c 50 -P 1 -n 20000 -q XADD s '*' f v >/dev/null 2>&1 # warm-up
    c0=$(switches "$pid"); t0=$(pid_ticks "$pid"); x0=$(procstat ctxt); i0=$(procstat intr)
    res=$(redis-benchmark -p "${ports[0]}" -c 50 -P 1 -n "$n" --csv XADD s '*' f v 2>&1 | tail -1 | cut -d, -f2,7 | tr -d '"')
    c1=$(switches "$pid"); t1=$(pid_ticks "$pid"); x1=$(procstat ctxt); i1=$(procstat intr)
    echo "$r $target XADD/s,p99_ms $res  proc-cs/XADD $(per $((c1 - c0)))  sys-cs/XADD $(per $((x1 - x0)))" \
      "intr/XADD $(per $((i1 - i0)))  cpu-us/XADD $(echo "scale=1; ($t1 - $t0) * 1000000 / $(getconf CLK_TCK) / $n" | bc)"
    kill "$pid"; wait "$pid" 2>/dev/null; pid=""
  done
done
