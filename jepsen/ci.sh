#!/usr/bin/env bash
# Fault-injection suite for CI: the ci profile (every nemesis and workload
# against 3 local raftstream nodes, under 3 minutes), one run of every
# nemesis with the netns driver (root; skipped where namespaces are
# unavailable), then the self-test:
# each known bug injected with --debug-inject-bug must be flagged (exit 1
# with an anomaly). Ends with "N passed, N failed" (the ci profile's
# checkers plus one line per injected bug). Exit 0 only when all passed.
#
#   jepsen/ci.sh [out-dir]        (JEPSEN_SEED=n replays a seed)
set -u
cd "$(dirname "$0")/.."
out=${1:-$(mktemp -d /tmp/jepsen-ci.XXXXXX)}
mkdir -p "$out"
bin="$out/bin"
mkdir -p "$bin"
go build -o "$bin/raftstream" ./cmd/raftstream && go build -o "$bin/jepsen" ./cmd/jepsen || {
	echo "build failed"; echo "0 passed, 1 failed"; exit 1; }
seed=${JEPSEN_SEED:-$(date +%s)}
# Small node log segments (256 KiB instead of 64 MiB): segment rotation,
# carrying quiet shards' logs forward and segment deletion all happen under
# the faults (hundreds of segments per node in a run).
export RAFTSTREAM_NODE_LOG_SEGMENT_BYTES=${RAFTSTREAM_NODE_LOG_SEGMENT_BYTES:-262144}
passed=0 failed=0

echo "== ci profile (seed $seed, output $out/ci)"
"$bin/jepsen" run -profile ci -bin "$bin/raftstream" -seed "$seed" -out "$out/ci" 2>"$out/ci.log" | tee "$out/ci.txt"
last=$(tail -n 1 "$out/ci.txt")
if [[ $last =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
	passed=$((passed + BASH_REMATCH[1])) failed=$((failed + BASH_REMATCH[2]))
else
	echo "ci profile: no summary (see $out/ci.log)"; failed=$((failed + 1))
fi

# The netns driver (root): the same nemeses with the nodes in network
# namespaces, partitions as nftables rules. Where namespaces are unavailable
# the driver says so and exits 2: reported as a skip, not a failure.
echo "== netns driver: every nemesis, 3 nodes (and the spare) in namespaces"
"$bin/jepsen" run -driver netns -bin "$bin/raftstream" -nodes 3 -seed "$seed" -duration 60s \
	-nemesis all \
	-fault-every 500ms -fault-for 1500ms -out "$out/netns" 2>"$out/netns.log" >"$out/netns.txt"
code=$?
if [[ $code -eq 2 ]] && grep -q 'skipping' "$out/netns.log"; then
	echo "SKIP: $(grep skipping "$out/netns.log")"
else
	last=$(tail -n 1 "$out/netns.txt")
	echo "netns: $last (exit $code)"
	if [[ $code -eq 0 && $last =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
		passed=$((passed + BASH_REMATCH[1])) failed=$((failed + BASH_REMATCH[2]))
	else
		grep -E '^(illegal|unknown)' "$out/netns.txt"
		failed=$((failed + 1))
	fi
fi

for bug in ack-before-commit stale-read drop-pel-update; do
	echo "== self-test: --debug-inject-bug $bug must be flagged"
	"$bin/jepsen" run -bin "$bin/raftstream" -nodes 3 -inject-bug "$bug" -seed "$seed" \
		-duration 10s -faults partition-leader,leader-pause -fault-every 700ms -fault-for 1500ms \
		-out "$out/bug-$bug" 2>"$out/bug-$bug.log" >"$out/bug-$bug.txt"
	code=$?
	grep '^illegal' "$out/bug-$bug.txt"
	if [[ $code -eq 1 ]]; then
		echo "ok: $bug flagged (exit 1)"; passed=$((passed + 1))
	else
		echo "FAIL: $bug not flagged (exit $code; see $out/bug-$bug.txt)"; failed=$((failed + 1))
	fi
done
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
