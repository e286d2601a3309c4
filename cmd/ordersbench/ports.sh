# Sourced by the benchmark scripts of this folder.
#
# freeports n prints n distinct free loopback ports, below the kernel's
# ephemeral range (32768+), so that no outgoing connection takes a port
# between this check and the server binding it.
freeports() {
  python3 -c 'import random, socket, sys
out = []
while len(out) < int(sys.argv[1]):
    p = random.randrange(10000, 32000)
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p))
    except OSError:
        continue
    finally:
        s.close()
    if p not in out:
        out.append(p)
print(" ".join(map(str, out)))' "$1"
}

# pid_ticks pid... prints the CPU time (user + system, in clock ticks) the
# processes have used so far.
pid_ticks() {
  local s=0 p
  for p in "$@"; do s=$((s + $(awk '{print $14+$15}' /proc/"$p"/stat))); done
  echo "$s"
}

# stop_pids stops the processes in the caller's pids array by PID, waits
# for them and empties the array.
stop_pids() {
  if [ ${#pids[@]} -gt 0 ]; then
    kill "${pids[@]}" 2>/dev/null
    wait "${pids[@]}" 2>/dev/null
  fi
  pids=()
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
