#!/bin/bash
# XADD throughput and latency with redis-benchmark (50 clients, -P 16 and -P 1),
# interleaved in one run: redis-server AOF always, raftstream 1 node with the
# bbolt log store, raftstream 1 node with the raft-wal log store.
# Usage: cmd/ordersbench/xadd-bench.sh RAFTSTREAM_BINARY [N_P16] [N_P1] [ROUNDS]
set -u
rs=${1:?raftstream binary}; n=${2:-200000}; n1=${3:-30000}; rounds=${4:-1}
d=$(mktemp -d)
fp() { python3 -c 'import socket,sys
ss=[socket.socket() for _ in range(int(sys.argv[1]))]
[s.bind(("127.0.0.1",0)) for s in ss]
print(" ".join(str(s.getsockname()[1]) for s in ss))' "$1"; }
read rp sp bp wp wbp < <(fp 5)
redis-server --port $rp --bind 127.0.0.1 --dir $d --save '' --appendonly yes --appendfsync always --daemonize no --logfile $d/redis.log &
rpid=$!
RAFTSTREAM_RAFT_LOG_STORE=bolt $rs -port $sp -cluster-port $bp -dir $d/rsb -log-level warn >$d/rsb.log 2>&1 &
spid=$!
RAFTSTREAM_RAFT_LOG_STORE=wal $rs -port $wp -cluster-port $wbp -dir $d/rsw -log-level warn >$d/rsw.log 2>&1 &
wpid=$!
for i in $(seq 400); do redis-cli -p $sp ping 2>/dev/null | grep -q PONG && redis-cli -p $wp ping 2>/dev/null | grep -q PONG && redis-cli -p $rp ping 2>/dev/null| grep -q PONG && break; sleep 0.1; done
ls $d/rsb/shards/0 $d/rsw/shards/0 2>&1 | tr '\n' ' '; echo
echo 'target,P,"rps","avg_ms","min_ms","p50_ms","p95_ms","p99_ms","max_ms"'
for r in $(seq $rounds); do
for P in 16 1; do
  N=$n; [ $P = 1 ] && N=$n1
  for t in redis:$rp bolt:$sp wal:$wp; do
    name=${t%%:*}; port=${t##*:}
    echo "$name,P$P,$(redis-benchmark -p $port -c 50 -P $P -n $N --csv XADD s$P '*' f v 2>&1 | tail -1 | cut -d, -f2-)   # $(uptime | sed 's/.*load average: //')"
  done
done
done
kill $rpid $spid $wpid; wait $rpid $spid $wpid 2>/dev/null
rm -rf $d
