#!/usr/bin/env bash
# The real docker compose test: a 3-node raftstream cluster from
# deploy/docker-compose.yml on a private Docker daemon, driven from the host
# with `redis-cli -c` through the published 127.0.0.1:700N ports.
#
#   sudo deploy/compose-test.sh            (root: it starts its own dockerd)
#
# 1. installs docker.io + docker-compose if missing (apt), starts a private
#    dockerd (own data/exec root and socket under a temp dir, no iptables);
#    prints SKIP and exits 0 if that daemon cannot start;
# 2. builds the static binary and the FROM-scratch image (nothing is pulled);
# 3. `docker-compose up -d`, waits until every container is healthy and
#    CLUSTER SLOTS covers 16384 slots;
# 4. writes to orders:{0}..orders:{15} (MOVED followed by redis-cli -c),
#    creates group billing, reads and acks with XREADGROUP/XACK;
# 5. keeps writing while one container is `docker kill`ed; TRYAGAIN,
#    CLUSTERDOWN and refused connections are retried (bounded), anything
#    else is an unknown outcome and is not retried;
# 6. checks every acknowledged entry is present exactly once with its
#    acknowledged ID, nothing unsent appeared, the group neither lost nor
#    redelivered entries and its PEL holds exactly what was read after the kill;
# 7. restarts the killed container and checks it serves and catches up;
# 8. `down` (volumes kept) and `up` again: the cluster comes back whole;
# 9. the fault-injection suite's external driver (jepsen/external) runs 45 s
#    of workload under docker kill/pause/network-disconnect faults through
#    the published ports and checks the history (JEPSEN=0 skips it).
# Everything (containers, volumes, network, image, daemon, docker0, temp dir)
# is removed by an EXIT trap, also on failure. The last line is
# "N passed, N failed"; the exit status is non-zero if anything failed.
#
# Environment: NODES=5 runs the 5-node variant (docker-compose.5node.yml);
# ROUNDS (writes per stream after the kill starts, default 30), JEPSEN=0
# skips step 9, JEPSEN_SEED=n replays its seed,
# KEEP_DAEMON_LOG=1 prints the dockerd log tail on exit.
set -uo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
project=rstest
image="raftstream:compose-test"
nodes="${NODES:-3}"
compose_files=(-f "$here/docker-compose.yml")
case "$nodes" in
  3) ;;
  5) compose_files+=(-f "$here/docker-compose.5node.yml") ;;
  *) echo "NODES must be 3 or 5"; exit 2 ;;
esac
rounds="${ROUNDS:-30}"
streams=16

passed=0
failed=0
pass() { passed=$((passed + 1)); echo "PASS: $*"; }
fail() { failed=$((failed + 1)); echo "FAIL: $*"; }
log() { echo "--- $*"; }
now_ms() { date +%s%3N; }

# ---------------------------------------------------------------- 1. docker
if ! command -v dockerd >/dev/null || ! command -v docker-compose >/dev/null; then
  log "installing docker.io and docker-compose"
  apt-get -o DPkg::Lock::Timeout=120 install -y -qq docker.io docker-compose >/dev/null 2>&1 || {
    apt-get update -qq >/dev/null 2>&1
    apt-get -o DPkg::Lock::Timeout=120 install -y -qq docker.io docker-compose >/dev/null 2>&1
  }
fi
if ! command -v redis-cli >/dev/null; then
  apt-get -o DPkg::Lock::Timeout=120 install -y -qq redis-tools >/dev/null 2>&1
fi
for tool in dockerd docker docker-compose redis-cli go; do
  if ! command -v "$tool" >/dev/null; then
    echo "SKIP: $tool is not installed and could not be installed"
    echo "0 passed, 0 failed"
    exit 0
  fi
done

T="$(mktemp -d /tmp/raftstream-compose.XXXXXX)"
export DOCKER_HOST="unix://$T/docker.sock"
export RAFTSTREAM_IMAGE="$image"
had_docker0=0
ip link show docker0 >/dev/null 2>&1 && had_docker0=1
writer_pid=""
dockerd_pid=""

compose() { docker-compose "${compose_files[@]}" -p "$project" "$@"; }

cleanup() {
  local status=$?
  set +e
  log "teardown"
  [ -n "$writer_pid" ] && kill "$writer_pid" 2>/dev/null && wait "$writer_pid" 2>/dev/null
  if [ -S "$T/docker.sock" ]; then
    compose down -v --remove-orphans -t 5 >/dev/null 2>&1
    docker image rm -f "$image" >/dev/null 2>&1
  fi
  pid="$(cat "$T/dockerd.pid" 2>/dev/null || echo "$dockerd_pid")"
  if [ -n "$pid" ]; then
    kill "$pid" 2>/dev/null
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -9 "$pid" 2>/dev/null
  fi
  # dockerd's own containerd (state under $T/exec) exits after it; wait for it.
  for _ in $(seq 1 50); do pgrep -f "$T/" >/dev/null || break; sleep 0.2; done
  if [ "${KEEP_DAEMON_LOG:-0}" = 1 ] && [ -f "$T/dockerd.log" ]; then tail -30 "$T/dockerd.log"; fi
  if [ "$had_docker0" = 0 ] && ip link show docker0 >/dev/null 2>&1; then ip link delete docker0; fi
  # The daemon has unmounted its overlays when it exits; anything left is
  # unmounted before the directory goes.
  grep -o " ${T}[^ ]*" /proc/mounts | sort -r | while read -r m; do umount -l "$m"; done
  rm -rf "$T"
  if [ "$status" != 0 ] && [ "$failed" = 0 ]; then
    failed=1; echo "FAIL: the script stopped with status $status"
  fi
  echo "$passed passed, $failed failed"
  [ "$failed" = 0 ]
  exit $?
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log "starting a private dockerd under $T"
dockerd --iptables=false --ip-forward=false --data-root "$T/data" --exec-root "$T/exec" \
  --pidfile "$T/dockerd.pid" -H "unix://$T/docker.sock" >"$T/dockerd.log" 2>&1 &
dockerd_pid=$!
up=0
for _ in $(seq 1 90); do
  if docker version >/dev/null 2>&1; then up=1; break; fi
  sleep 1
done
if [ "$up" != 1 ]; then
  echo "SKIP: the private dockerd did not start within 90 s (see below); nothing was tested"
  tail -5 "$T/dockerd.log"
  exit 0
fi

# ---------------------------------------------------------------- 2. image
for p in $(seq 7001 $((7000 + nodes))); do
  if timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$p" 2>/dev/null; then
    fail "127.0.0.1:$p is already in use; stop whatever listens there"
    exit 1
  fi
done
log "building the static binary and $image"
mkdir -p "$here/.build"
if ! (cd "$root" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$here/.build/raftstream" ./cmd/raftstream); then
  fail "go build"
  exit 1
fi
if DOCKER_BUILDKIT=0 docker build -q -t "$image" "$here" >/dev/null 2>"$T/build.err"; then
  pass "image $image built FROM scratch ($(docker image inspect -f '{{.Size}}' "$image") bytes)"
else
  cat "$T/build.err"; fail "docker build"; exit 1
fi

# ---------------------------------------------------------------- 3. cluster
log "docker-compose up"
t0=$(now_ms)
if ! compose up -d --no-build 2>"$T/up.err"; then
  cat "$T/up.err"; fail "docker-compose up"; exit 1
fi
containers() { compose ps -q 2>/dev/null; }
health_of() { docker inspect -f '{{.State.Health.Status}}' "$1" 2>/dev/null; }
wait_healthy() { # wait_healthy SECONDS: every container of the project healthy
  local deadline=$(( $(date +%s) + $1 )) all c
  while [ "$(date +%s)" -lt "$deadline" ]; do
    all=1
    for c in $(containers); do [ "$(health_of "$c")" = healthy ] || all=0; done
    [ "$all" = 1 ] && [ "$(containers | wc -l)" -ge "$nodes" ] && return 0
    sleep 1
  done
  return 1
}
# slot_coverage PORT: number of slots CLUSTER SLOTS assigns, each counted once.
slot_coverage() {
  redis-cli -p "$1" --no-raw CLUSTER SLOTS 2>/dev/null | awk '
    /1\) \(integer\) [0-9]+$/ { lo = $NF + 0; getline; hi = $NF + 0; for (s = lo; s <= hi; s++) seen[s] = 1 }
    END { c = 0; for (s = 0; s < 16384; s++) if (s in seen) c++; print c }'
}
if wait_healthy 120; then
  pass "$nodes containers healthy after $(( ($(now_ms) - t0) ))ms"
else
  fail "containers not healthy within 120 s"
  for c in $(containers); do docker logs --tail 20 "$c" 2>&1; done
  exit 1
fi
ok=1
for p in $(seq 7001 $((7000 + nodes))); do
  [ "$(redis-cli -p "$p" PING 2>&1)" = PONG ] || { ok=0; echo "127.0.0.1:$p: no PONG"; }
done
[ "$ok" = 1 ] && pass "published ports 127.0.0.1:7001-$((7000 + nodes)) reach the containers" || fail "published ports"
cov=0
for _ in $(seq 1 30); do cov=$(slot_coverage 7001); [ "$cov" = 16384 ] && break; sleep 1; done
[ "$cov" = 16384 ] && pass "CLUSTER SLOTS covers 16384 slots" || fail "CLUSTER SLOTS covers $cov slots"
if redis-cli -p 7001 CLUSTER SLOTS | grep -qx '127.0.0.1' && ! redis-cli -p 7001 CLUSTER SLOTS | grep -q '^172\.'; then
  pass "CLUSTER SLOTS announces 127.0.0.1 addresses"
else
  fail "CLUSTER SLOTS does not announce the published addresses"
fi

# ---------------------------------------------------------------- 4. writes
# xadd KEY PAYLOAD FILE-PREFIX: one XADD through redis-cli -c, retried while
# the error says it was not applied. Appends "KEY PAYLOAD ID MS" to .acked,
# "KEY PAYLOAD REPLY" to .unknown, or "KEY PAYLOAD REPLY" to .gaveup.
xadd() {
  local key=$1 payload=$2 out=$3 deadline=$(( $(date +%s) + 60 )) reply
  while :; do
    reply=$(timeout 10 redis-cli -c -p 7001 XADD "$key" '*' seq "$payload" 2>&1 | tr -d '\r' | tail -1)
    if [[ "$reply" =~ ^[0-9]+-[0-9]+$ ]]; then
      echo "$key $payload $reply $(now_ms)" >>"$out.acked"; return 0
    fi
    case "$reply" in
      *TRYAGAIN*|*CLUSTERDOWN*|*"Could not connect"*|*"Connection refused"*|*"No route"*)
        echo "$key $payload $(now_ms) $reply" >>"$out.retries"
        if [ "$(date +%s)" -ge "$deadline" ]; then echo "$key $payload $reply" >>"$out.gaveup"; return 1; fi
        sleep 0.2 ;;
      *) echo "$key $payload ${reply:-<no reply>}" >>"$out.unknown"; return 0 ;;
    esac
  done
}
write_rounds() { # write_rounds FIRST LAST FILE-PREFIX
  local r i
  for r in $(seq "$1" "$2"); do
    for i in $(seq 0 $((streams - 1))); do xadd "orders:{$i}" "w-$r-$i" "$3"; done
  done
}
W="$T/w"
: >"$W.acked"; : >"$W.unknown"; : >"$W.retries"; : >"$W.gaveup"
log "phase 1: 5 writes to each of orders:{0}..orders:{15}"
write_rounds 1 5 "$W"
[ "$(wc -l <"$W.acked")" = $((5 * streams)) ] && pass "phase 1: $((5 * streams)) XADDs acknowledged through MOVED redirects" \
  || fail "phase 1: $(wc -l <"$W.acked") of $((5 * streams)) XADDs acknowledged ($(cat "$W.unknown" "$W.gaveup" | head -3))"

# readgroup KEY: XREADGROUP every new entry of KEY for billing/c1, retried on
# TRYAGAIN/CLUSTERDOWN; prints the delivered IDs, one a line.
readgroup() {
  local key=$1 out
  for _ in $(seq 1 150); do
    out=$(redis-cli -c -p 7001 XREADGROUP GROUP billing c1 COUNT 100000 STREAMS "$key" '>' 2>&1)
    case "$out" in *TRYAGAIN*|*CLUSTERDOWN*|*"Could not connect"*) sleep 0.2; continue ;; esac
    # Flattened reply: the key, then id / field / value triples.
    echo "$out" | awk -v k="$key" 'NR == 1 { if ($0 == "") exit 0; if ($0 != k) exit 3; next } (NR - 2) % 3 == 0 { print }'
    return "${PIPESTATUS[1]}"
  done
  return 1
}
ok=1
for i in $(seq 0 $((streams - 1))); do
  for _ in $(seq 1 50); do # TRYAGAIN/CLUSTERDOWN prove it was not applied
    r=$(redis-cli -c -p 7001 XGROUP CREATE "orders:{$i}" billing 0 2>&1)
    case "$r" in *TRYAGAIN*|*CLUSTERDOWN*) sleep 0.2 ;; *) break ;; esac
  done
  [ "$r" = OK ] || { ok=0; echo "XGROUP CREATE orders:{$i}: $r"; }
  readgroup "orders:{$i}" >"$T/read1.$i" || { ok=0; echo "XREADGROUP orders:{$i} failed"; }
  want=$(awk -v k="orders:{$i}" '$1 == k { print $3 }' "$W.acked" | sort)
  [ "$(sort "$T/read1.$i")" = "$want" ] || { ok=0; echo "orders:{$i}: XREADGROUP delivered $(wc -l <"$T/read1.$i") entries, want $(echo "$want" | wc -l)"; }
  if [ -s "$T/read1.$i" ]; then
    mapfile -t ids <"$T/read1.$i"
    r=$(redis-cli -c -p 7001 XACK "orders:{$i}" billing "${ids[@]}" 2>&1)
    [ "$r" = "$(wc -l <"$T/read1.$i" | tr -d ' ')" ] || { ok=0; echo "XACK orders:{$i}: $r"; }
  fi
done
[ "$ok" = 1 ] && pass "XGROUP CREATE + XREADGROUP delivered every acknowledged entry, XACK acked them" || fail "group phase 1"

# ---------------------------------------------------------------- 5. kill
victim=$(compose ps -q node2)
log "phase 2: writing rounds 6..$((5 + rounds)) while node2 ($victim) is killed"
write_rounds 6 $((5 + rounds)) "$W" &
writer_pid=$!
# Kill once the writer has been running for a few rounds.
before=$(wc -l <"$W.acked")
for _ in $(seq 1 300); do
  [ $(( $(wc -l <"$W.acked") - before )) -ge $((3 * streams)) ] && break
  sleep 0.1
done
kill_ms=$(now_ms)
docker kill "$victim" >/dev/null && pass "docker kill node2 after $(( $(wc -l <"$W.acked") - before )) phase-2 writes" || fail "docker kill node2"
wait "$writer_pid"; writer_pid=""
dockerd_pid=""
acked_total=$(wc -l <"$W.acked")
after_kill=$(awk -v k="$kill_ms" '$4 > k' "$W.acked" | wc -l)
unknown=$(wc -l <"$W.unknown")
retries=$(wc -l <"$W.retries")
stall=$(awk -v k="$kill_ms" 'BEGIN { last = k; m = 0 } $4 > k { if ($4 - last > m) m = $4 - last; last = $4 } END { print m }' \
  <(sort -k4,4n "$W.acked"))
log "acknowledged $acked_total, after the kill $after_kill, unknown outcome $unknown, retried attempts $retries, longest write stall after the kill ${stall}ms"
if [ -s "$W.gaveup" ]; then fail "writes gave up after 60 s of retries: $(head -3 "$W.gaveup")"; fi
[ "$after_kill" -ge $((streams * (rounds - 5))) ] && pass "writes continued after the kill ($after_kill acknowledged, longest stall ${stall}ms)" \
  || fail "only $after_kill writes acknowledged after the kill"
if [ "$unknown" -gt 0 ]; then echo "unknown outcomes:"; head -5 "$W.unknown"; fi
# Unknown outcomes are the writes redirect-followed to the killed node (or in
# flight to it) before the others notice it is gone (a heartbeat timeout,
# 0.5-1 s); how many depends on how fast this loop writes. One round of
# writes bounds them; all are checked below (present or not, never twice).
[ "$unknown" -le "$streams" ] && pass "unknown-outcome replies: $unknown (at most one round of $streams tolerated, checked below)" || fail "$unknown unknown-outcome replies"

# ---------------------------------------------------------------- 6. verify
ok=1
: >"$T/present"
for i in $(seq 0 $((streams - 1))); do
  key="orders:{$i}"
  out=$(redis-cli -c -p 7001 XRANGE "$key" - + 2>&1)
  # Flattened reply: id / field / value triples.
  echo "$out" | awk -v k="$key" 'NR % 3 == 1 { id = $0 } NR % 3 == 0 { print k, $0, id }' >>"$T/present"
done
# Every acknowledged payload exactly once, under its acknowledged ID.
while read -r key payload id _; do
  n=$(awk -v k="$key" -v p="$payload" -v id="$id" '$1 == k && $2 == p { c++; if ($3 != id) bad = 1 } END { print (bad ? "badid" : c + 0) }' "$T/present")
  [ "$n" = 1 ] || { ok=0; echo "$key $payload (ack $id): present $n times"; }
done <"$W.acked"
[ "$ok" = 1 ] && pass "XRANGE: all $acked_total acknowledged entries present exactly once with their IDs" || fail "acknowledged entries missing or duplicated"
dups=$(awk '{ print $1, $2 }' "$T/present" | sort | uniq -d | wc -l)
[ "$dups" = 0 ] && pass "no payload appears twice" || fail "$dups payloads appear twice"
stray=$(awk 'NR == FNR { sent[$1 " " $2] = 1; next } !(($1 " " $2) in sent)' <(cat "$W.acked" "$W.unknown") "$T/present" | wc -l)
[ "$stray" = 0 ] && pass "no entry that was never sent" || fail "$stray entries that were never sent"

# The group: what XREADGROUP > delivers now is exactly what phase 1 did not,
# and the PEL holds exactly those (the phase-1 XACKs survived the failover).
ok=1
for i in $(seq 0 $((streams - 1))); do
  key="orders:{$i}"
  readgroup "$key" >"$T/read2.$i" || { ok=0; echo "XREADGROUP $key failed"; continue; }
  both=$(sort "$T/read1.$i" "$T/read2.$i" | uniq -d | wc -l)
  [ "$both" = 0 ] || { ok=0; echo "$key: $both entries delivered twice to the group"; }
  all=$(awk -v k="$key" '$1 == k { print $3 }' "$T/present" | sort)
  [ "$(sort "$T/read1.$i" "$T/read2.$i")" = "$all" ] || { ok=0; echo "$key: group deliveries do not match the stream"; }
  pel=$(redis-cli -c -p 7001 XPENDING "$key" billing 2>&1 | head -1)
  [ "$pel" = "$(wc -l <"$T/read2.$i" | tr -d ' ')" ] || { ok=0; echo "$key: XPENDING count $pel, want $(wc -l <"$T/read2.$i")"; }
done
[ "$ok" = 1 ] && pass "consumer group: no entry lost or redelivered across the failover, PEL exact" || fail "consumer group state after the failover"

# ---------------------------------------------------------------- 7. restart
log "restarting node2"
docker start "$victim" >/dev/null
if wait_healthy 90; then pass "node2 healthy again after restart"; else fail "node2 not healthy after restart"; docker logs --tail 20 "$victim" 2>&1; fi
# With more nodes than replicas a node hosts only some shards: READONLY
# reads of the others are redirected (MOVED) and are skipped. A node may
# host none (5 nodes on a host of few CPUs: the shard count is fitted to
# it); then its writes below are what shows it serving.
ok=0
if [ "$(redis-cli -p 7002 INFO all 2>/dev/null | tr -d '\r' | sed -n 's/^raft_shards_hosted://p')" = 0 ]; then
  ok=1 hosted=0
  pass "restarted node2 hosts no shard ($(redis-cli -p 7002 INFO all | tr -d '\r' | sed -n 's/^raft_shards://p') shards over the nodes): no READONLY reads to check"
fi
for _ in $(seq 1 60); do
  [ "$ok" = 1 ] && break
  lag=0 hosted=0
  for i in $(seq 0 $((streams - 1))); do
    want=$(awk -v k="orders:{$i}" '$1 == k' "$T/present" | wc -l)
    got=$(printf 'READONLY\nXLEN orders:{%d}\n' "$i" | redis-cli -p 7002 2>&1 | grep -v '^$' | tail -1)
    case "$got" in MOVED*) continue ;; esac
    hosted=$((hosted + 1))
    [ "$got" = "$want" ] || lag=1
  done
  [ "$lag" = 0 ] && [ "$hosted" -gt 0 ] && { ok=1; break; }
  sleep 0.5
done
if [ "$hosted" -gt 0 ]; then
  [ "$ok" = 1 ] && pass "restarted node2 caught up (READONLY XLEN on 7002 matches the $hosted streams it hosts)" \
    || fail "restarted node2 did not catch up within 30 s ($hosted streams hosted)"
elif [ "$ok" != 1 ]; then
  fail "restarted node2 did not catch up within 30 s ($hosted streams hosted)"
fi
r=$(redis-cli -c -p 7002 XADD 'orders:{0}' '*' seq after-restart 2>&1)
[[ "$r" =~ ^[0-9]+-[0-9]+$ ]] && pass "writes through the restarted node ($r)" || fail "write through 7002 after restart: $r"
cov=$(slot_coverage 7002)
[ "$cov" = 16384 ] && pass "CLUSTER SLOTS on node2 covers 16384 slots" || fail "CLUSTER SLOTS on node2 covers $cov slots"

# ---------------------------------------------------------------- 8. recreate
# `down` without -v removes the containers and the network but keeps the
# volumes; `up` recreates them. The nodes must come back on the addresses the
# cluster recorded and still hold every entry.
log "docker-compose down (volumes kept) and up again"
compose down -t 20 >/dev/null 2>&1
if compose up -d --no-build >/dev/null 2>"$T/up2.err" && wait_healthy 120; then
  pass "cluster recreated from its volumes is healthy"
else
  cat "$T/up2.err"; fail "cluster not healthy after down/up"
  for c in $(containers); do docker logs --tail 5 "$c" 2>&1; done
fi
ok=1
for i in $(seq 0 $((streams - 1))); do
  want=$(awk -v k="orders:{$i}" '$1 == k' "$T/present" | wc -l)
  [ "$i" = 0 ] && want=$((want + 1)) # the write through node2 after its restart
  got=""
  for _ in $(seq 1 50); do
    got=$(redis-cli -c -p 7001 XLEN "orders:{$i}" 2>&1 | tail -1)
    [[ "$got" =~ ^[0-9]+$ ]] && break
    sleep 0.2
  done
  [ "$got" = "$want" ] || { ok=0; echo "orders:{$i}: XLEN $got, want $want"; }
done
[ "$ok" = 1 ] && pass "every entry present after down/up" || fail "entries after down/up"

# ---------------------------------------------------------------- 9. jepsen
# The fault-injection suite's external driver against this cluster: clients
# only through the published 127.0.0.1 ports, faults with docker kill/start,
# pause/unpause and network disconnect/connect (at the node's fixed IP); the
# history is checked (lost, duplicates, ids, prefix, linearizable, groups,
# liveness). About 1.5 minutes; JEPSEN=0 skips it.
if [ "${JEPSEN:-1}" = 1 ]; then
  log "jepsen external driver against the compose cluster"
  subnet="${RAFTSTREAM_SUBNET:-172.30.70}"
  addrs="" names="" ips=""
  for n in $(seq 1 "$nodes"); do
    c=$(docker inspect -f '{{.Name}}' "$(compose ps -q "node$n")" 2>/dev/null | tr -d /)
    addrs+="${addrs:+,}127.0.0.1:$((7000 + n))" names+="${names:+,}$c" ips+="${ips:+,}$subnet.1$n"
  done
  jseed="${JEPSEN_SEED:-$(date +%s)}"
  if (cd "$root" && go build -o "$T/jepsen" ./cmd/jepsen); then
    "$T/jepsen" run -addr "$addrs" -docker "$names" -docker-network "${project}_raftstream" -docker-ips "$ips" \
      -faults kill,pause,partition-one,partition-leader,leader-pause,reset -duration 45s -keys 4 \
      -seed "$jseed" -out "$T/jepsen-out" >"$T/jepsen.txt" 2>"$T/jepsen.log"
    code=$?
    grep -E '^(ok|illegal|unknown) ' "$T/jepsen.txt"
    if [ "$code" = 0 ]; then
      pass "jepsen (seed $jseed): $(tail -1 "$T/jepsen.txt") under $(grep -c 'msg=fault start' "$T/jepsen.log") docker faults"
    else
      keep=$(mktemp -d /tmp/raftstream-compose-jepsen.XXXXXX)
      cp -r "$T/jepsen-out" "$T/jepsen.txt" "$T/jepsen.log" "$keep/"
      fail "jepsen (seed $jseed) exit $code: $(tail -1 "$T/jepsen.txt"); history and report kept in $keep"
    fi
  else
    fail "go build ./cmd/jepsen"
  fi
fi
