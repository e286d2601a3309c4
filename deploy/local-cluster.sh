#!/usr/bin/env bash
# Run an N-node raftstream cluster as local processes on 127.0.0.1.
#
#   deploy/local-cluster.sh start N     start (or restart) nodes 1..N and wait until the
#                                       cluster serves all 16384 slots
#   deploy/local-cluster.sh status      pids, PING per node, CLUSTER NODES
#   deploy/local-cluster.sh stop        SIGTERM every recorded pid (SIGKILL after 15 s); data kept
#   deploy/local-cluster.sh clean       stop, then delete the data directory
#
# Node i: RESP 127.0.0.1:700i, cluster bus 127.0.0.1:1700i (TCP, and UDP for
# gossip, the failure detector: the same port number), data DIR/node<i>,
# log DIR/node<i>.log, pid DIR/node<i>.pid. Only recorded pids are signalled.
#
# Environment:
#   RAFTSTREAM_LOCAL_DIR  data directory (default deploy/.build/local, git-ignored)
#   RAFTSTREAM_BIN        server binary (default: built into deploy/.build/raftstream)
#   RAFTSTREAM_ARGS       extra flags for every node (e.g. "--log-level debug")
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
dir="${RAFTSTREAM_LOCAL_DIR:-$here/.build/local}"
bin="${RAFTSTREAM_BIN:-}"

usage() { sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }

# slots_covered PORT: slots CLUSTER SLOTS assigns (each counted once).
slots_covered() {
  redis-cli -p "$1" --no-raw CLUSTER SLOTS 2>/dev/null | awk '
    /1\) \(integer\) [0-9]+$/ { lo = $NF + 0; getline; hi = $NF + 0; for (s = lo; s <= hi; s++) seen[s] = 1 }
    END { c = 0; for (s = 0; s < 16384; s++) if (s in seen) c++; print c }'
}

# alive PIDFILE: the recorded process exists and is a raftstream.
alive() {
  local pid
  [ -f "$1" ] || return 1
  pid="$(cat "$1")"
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q raftstream
}

nodes() { ls "$dir"/node*.pid 2>/dev/null | sed 's/.*node\([0-9]*\)\.pid/\1/' | sort -n; }

start() {
  local n="$1" i join=""
  [[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le 9 ] || { echo "N must be 1..9" >&2; exit 2; }
  command -v redis-cli >/dev/null || { echo "redis-cli is required (apt-get install redis-tools)" >&2; exit 1; }
  mkdir -p "$dir"
  if [ -f "$dir/size" ] && [ "$(cat "$dir/size")" != "$n" ]; then
    echo "$dir holds a $(cat "$dir/size")-node cluster; run '$0 clean' first or start $(cat "$dir/size")" >&2
    exit 1
  fi
  if [ -z "$bin" ]; then
    bin="$here/.build/raftstream"
    echo "building $bin"
    (cd "$root" && CGO_ENABLED=0 go build -o "$bin" ./cmd/raftstream)
  fi
  for i in $(seq 1 "$n"); do join="$join${join:+,}127.0.0.1:$((17000 + i))"; done
  echo "$n" >"$dir/size"
  for i in $(seq 1 "$n"); do
    if alive "$dir/node$i.pid"; then echo "node$i already running (pid $(cat "$dir/node$i.pid"))"; continue; fi
    if redis-cli -p $((7000 + i)) PING >/dev/null 2>&1; then
      echo "127.0.0.1:$((7000 + i)) is taken by another process" >&2; exit 1
    fi
    # shellcheck disable=SC2086 # RAFTSTREAM_ARGS is a list of flags
    nohup "$bin" --bind 127.0.0.1 --port $((7000 + i)) --cluster-port $((17000 + i)) \
      --dir "$dir/node$i" --node-name "node$i" --bootstrap-expect "$n" --join "$join" \
      ${RAFTSTREAM_ARGS:-} >>"$dir/node$i.log" 2>&1 </dev/null &
    echo $! >"$dir/node$i.pid"
    echo "node$i: pid $! RESP 127.0.0.1:$((7000 + i)) bus 127.0.0.1:$((17000 + i)) log $dir/node$i.log"
  done
  # Every node answers, then every node sees all slots served.
  local deadline=$(( $(date +%s) + 90 )) ok
  while :; do
    ok=1
    for i in $(seq 1 "$n"); do
      alive "$dir/node$i.pid" || { echo "node$i exited; tail of its log:" >&2; tail -5 "$dir/node$i.log" >&2; exit 1; }
      [ "$(redis-cli -p $((7000 + i)) PING 2>/dev/null)" = PONG ] || { ok=0; break; }
      [ "$(slots_covered $((7000 + i)))" = 16384 ] || { ok=0; break; }
    done
    [ "$ok" = 1 ] && break
    if [ "$(date +%s)" -ge "$deadline" ]; then echo "cluster not ready within 90 s (see $dir/node*.log)" >&2; exit 1; fi
    sleep 0.5
  done
  echo "ready: $n nodes, CLUSTER SLOTS covers 16384 slots; try: redis-cli -c -p 7001"
}

stop() {
  local i pid pids=()
  for i in $(nodes); do
    if alive "$dir/node$i.pid"; then
      pid="$(cat "$dir/node$i.pid")"; kill -TERM "$pid"; pids+=("$pid"); echo "node$i: SIGTERM $pid"
    fi
  done
  for _ in $(seq 1 150); do
    local left=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && left=1; done
    [ "$left" = 0 ] && break
    sleep 0.1
  done
  for pid in "${pids[@]}"; do
    if kill -0 "$pid" 2>/dev/null; then echo "pid $pid still running after 15 s: SIGKILL"; kill -KILL "$pid"; fi
  done
  for i in $(nodes); do rm -f "$dir/node$i.pid"; done
}

status() {
  local i any=""
  [ -d "$dir" ] || { echo "no cluster in $dir"; return 0; }
  for i in $(seq 1 "$(cat "$dir/size" 2>/dev/null || echo 0)"); do
    if alive "$dir/node$i.pid"; then
      echo "node$i: pid $(cat "$dir/node$i.pid") 127.0.0.1:$((7000 + i)) $(redis-cli -p $((7000 + i)) PING 2>&1)"
      any="${any:-$((7000 + i))}"
    else
      echo "node$i: not running"
    fi
  done
  if [ -n "$any" ]; then
    echo "slots covered (CLUSTER SLOTS via $any): $(slots_covered "$any")"
    redis-cli -p "$any" CLUSTER NODES
  fi
}

case "${1:-}" in
  start) [ $# -eq 2 ] || usage; start "$2" ;;
  stop) stop ;;
  status) status ;;
  clean) stop; rm -rf "$dir"; echo "removed $dir" ;;
  *) usage ;;
esac
