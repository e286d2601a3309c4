#!/usr/bin/env bash
# The commands that README.md, jepsen/README.md, deploy/README.md and
# cmd/ordersbench/PERFORMANCE.md tell a user to run, run as written in a
# fresh clone of this tree (git clone of HEAD), the whole plan twice in the
# same folder: a command that fails, works only once, or leaves files that
# git does not ignore, fails the check.
#
#   jepsen/docs-commands.sh [workdir]    (about 6 minutes on 2 cores; root for the netns driver)
#   jepsen/docs-commands.sh -plan        only compare the plan with the pages (a second)
#   DOCS_GROUPS="broker jepsen" jepsen/docs-commands.sh    only those groups (see == below)
#
# The plan below lists the commands page by page:
#   run    CMD             run as written; fails on a non-zero exit
#   reply  CMD             run as written (a redis-cli command): also fails on an error reply
#   bg     CMD             run as written in the background (a server); `do stop_bg` stops it by PID
#   short  CMD ==> FORM    a long run (soak, benchmark) run as FORM: the documented command with
#                          shorter durations and sizes, scratch paths under the work directory
#   skip   CMD ==> WHY     not run here, and why (Docker: deploy/compose-test.sh, which prints SKIP
#                          where Docker cannot run; the test suite and jepsen/ci.sh: .ci/run)
#   do     STEP            a step of the check itself (wait for a port, stop a server)
#   @ FILE                 the page the commands below come from
#   == GROUP               commands run in one shell, in order (variables and jobs carry over)
# Every CMD must appear word for word in its page, and every command line of
# every code block of the four pages must be in the plan: a page that
# changes without the plan fails the check. A group whose fixed ports are
# taken by another process is a SKIP (its commands would talk to that
# process); so is the netns group where namespaces are unavailable.
# Ends with "N passed, N failed"; exit 0 only when none failed.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
plan_only=
if [[ ${1:-} == -plan ]]; then plan_only=1; shift; fi
made=
work=${1:-}
if [[ -n $plan_only ]]; then work=; fi
if [[ -z $plan_only ]]; then
	if [[ -z $work ]]; then work=$(mktemp -d /tmp/docs-commands.XXXXXX) && made=1; fi
	mkdir -p "$work/logs" "$work/scratch"
	work=$(cd "$work" && pwd)
fi
clone=$work/clone
export CHECK_TMP=$work/scratch # the short forms' scratch paths

plan() {
	cat <<'PLAN'
== broker
@ README.md
do     ports_free 6379
bg     go run ./cmd/raftstream
do     wait_pong 6379
reply  redis-cli XADD orders '*' customer alice amount 49.99
reply  redis-cli XADD orders '*' customer bob amount 12.50
reply  redis-cli XGROUP CREATE orders billing 0
reply  redis-cli XREADGROUP GROUP billing worker-1 COUNT 10 STREAMS orders '>'
reply  redis-cli XACK orders billing 1796206675005-0
reply  redis-cli XPENDING orders billing
reply  redis-cli RAFTSTREAM RETENTION SET 'orders:*' MAXAGE 86400000 MAXLEN 1000000 ACKED
reply  redis-cli RAFTSTREAM RETENTION SET audit MAXBYTES 512mb
reply  redis-cli RAFTSTREAM RETENTION GET 'orders:*'
reply  redis-cli RAFTSTREAM RETENTION LIST
reply  redis-cli RAFTSTREAM RETENTION DEL 'orders:*'
short  raftstream health --addr host:port ==> go run ./cmd/raftstream health --addr 127.0.0.1:6379
short  raftstream --help ==> go run ./cmd/raftstream --help
do     stop_bg
skip   deploy/test.sh ==> the test suite: .ci/run runs it
skip   raftstream import --from 127.0.0.1:6380 --to 127.0.0.1:6379 --verify ==> needs a Redis with streams: TestImportFromRedis (cmd/raftstream) runs this import
skip   raftstream import --from 127.0.0.1:7000 --cluster --match 'orders:*' --to 127.0.0.1:7001 ==> needs a Redis Cluster: TestImportFromRedisCluster (cmd/raftstream) runs this import

== cluster
@ README.md
do     ports_free 7001 7002 7003 17001 17002 17003
run    go build -o raftstream ./cmd/raftstream
run    J=127.0.0.1:17001,127.0.0.1:17002,127.0.0.1:17003
run    ./raftstream --port 7001 --cluster-port 17001 --dir raftstream-cluster/n1 --join $J --bootstrap-expect 3 &
run    ./raftstream --port 7002 --cluster-port 17002 --dir raftstream-cluster/n2 --join $J --bootstrap-expect 3 &
run    ./raftstream --port 7003 --cluster-port 17003 --dir raftstream-cluster/n3 --join $J --bootstrap-expect 3 &
run    until redis-cli -p 7001 CLUSTER INFO 2>/dev/null | grep -q cluster_state:ok; do sleep 0.5; done
reply  redis-cli -c -p 7001 XADD orders '*' customer alice
run    S=$(redis-cli -p 7001 RAFTSTREAM SHARD ADD)
run    ./raftstream slots move --addr 127.0.0.1:7001 --slots 0-999 --to $S --wait
reply  redis-cli -p 7001 RAFTSTREAM SLOTS STATUS
run    ./raftstream slots move --addr 127.0.0.1:7001 --slots 0-999 --to 0 --wait
run    ./raftstream shard remove --addr 127.0.0.1:7001 --shard $S
reply  redis-cli -p 7001 RAFTSTREAM SHARD POLICY
reply  redis-cli -p 7001 RAFTSTREAM SHARD POLICY AUTO
run    kill %1 %2 %3 && wait
run    go test -run '^$' -bench Throughput -benchtime 1x ./cmd/raftstream

== jepsen
@ jepsen/README.md
short  go run ./cmd/jepsen --profile ci ==> go run ./cmd/jepsen --profile ci -time 2s
short  go run ./cmd/jepsen run -profile soak -time 30m ==> go run ./cmd/jepsen run -profile soak -time 10s
run    go build -o raftstream ./cmd/raftstream && go build -o jepsen-run ./cmd/jepsen
short  ./jepsen-run run -bin ./raftstream -nodes 3 -duration 60s -faults kill,pause,stall,reset -out jepsen-out ==> ./jepsen-run run -bin ./raftstream -nodes 3 -duration 5s -faults kill,pause,stall,reset -out jepsen-out
run    ./jepsen-run check -out jepsen-out/check jepsen-out/latest/history.jsonl
run    go test ./jepsen/workload -run 'Failover|Crash' -update-fixtures
do     git checkout -- jepsen/testdata
skip   jepsen/ci.sh [outdir] ==> .ci/run runs it
skip   jepsen/docs-commands.sh ==> this check
skip   go run ./cmd/jepsen run -addr 127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003 -docker rstest_node1_1,rstest_node2_1,rstest_node3_1 -docker-network rstest_raftstream -docker-ips 172.30.70.11,172.30.70.12,172.30.70.13 -faults kill,pause,partition-one,partition-leader,leader-pause,reset -duration 60s -keys 4 ==> Docker: deploy/compose-test.sh ends with such a run

== jepsen-netns
@ jepsen/README.md
do     skip_unless netns_usable
short  go run ./cmd/jepsen run -profile ci -driver netns ==> go run ./cmd/jepsen run -profile ci -driver netns -time 2s

== deploy
@ deploy/README.md
do     ports_free 7001 7002 7003 17001 17002 17003
run    deploy/local-cluster.sh start 3
reply  redis-cli -c -p 7001 XADD 'orders:{1}' '*' item book
run    deploy/local-cluster.sh status
run    deploy/local-cluster.sh stop
run    deploy/local-cluster.sh clean
run    go test ./deploy
skip   deploy/build-image.sh ==> Docker: deploy/compose-test.sh builds and runs the image
skip   docker run -d -p 127.0.0.1:6379:6379 -v rs-data:/data raftstream:local ==> Docker
skip   docker-compose -f deploy/docker-compose.yml -p rs up -d ==> Docker: deploy/compose-test.sh
skip   docker-compose -f deploy/docker-compose.yml -p rs ps ==> Docker: deploy/compose-test.sh
skip   redis-cli -c -p 7001 CLUSTER SLOTS ==> the compose cluster's: deploy/compose-test.sh
skip   docker-compose -f deploy/docker-compose.yml -p rs down ==> Docker: deploy/compose-test.sh
skip   docker-compose -f deploy/docker-compose.yml -f deploy/docker-compose.5node.yml -p rs5 up -d ==> Docker
skip   sudo deploy/compose-test.sh ==> .ci/run runs deploy/compose-test.sh
skip   kubectl apply -f deploy/k8s/raftstream.yaml ==> a Kubernetes cluster; go test ./deploy checks the manifest
skip   kubectl run -it --rm cli --image=redis:7 -- redis-cli -c -h raftstream CLUSTER NODES ==> a Kubernetes cluster

== ordersbench
@ cmd/ordersbench/PERFORMANCE.md
short  ROUNDS=6 VARIANTS="RAFTSTREAM_IO_URING=off RAFTSTREAM_EVENT_LOOP=off" cmd/ordersbench/single-node.sh ==> ROUNDS=1 N16=2000 N1=500 DRAIN_N=2000 RSS_N=2000 VARIANTS="RAFTSTREAM_IO_URING=off RAFTSTREAM_EVENT_LOOP=off" cmd/ordersbench/single-node.sh
short  ROUNDS=3 DUR=5s cmd/ordersbench/redis-cluster.sh ==> SETS="redis:3x1 raftstream:3:RAFTSTREAM_RAFT_BUS=off" ROUNDS=1 DUR=1s PIPELINES=16 DRAIN_N=2000 cmd/ordersbench/redis-cluster.sh
short  SETS="redis:3x2 raftstream:3x1 raftstream:3x2 raftstream:3x3 raftstream:3x6 raftstream:3x16 raftstream:6x6" ROUNDS=2 DUR=5s PIPELINES=16 DRAIN_N=0 cmd/ordersbench/redis-cluster.sh ==> SETS="raftstream:3x2:RAFTSTREAM_GATHER=0" ROUNDS=1 DUR=1s PIPELINES=1 DRAIN_N=0 cmd/ordersbench/redis-cluster.sh
PLAN
}

pages=(README.md jepsen/README.md deploy/README.md cmd/ordersbench/PERFORMANCE.md)

# commands PAGE: the command lines of PAGE's code blocks, one a line: "$ "
# lines only in a block that has them (a session with output), comment
# lines dropped, "\" continuations joined, trailing "# comments" cut.
commands() {
	awk '
	function flush(   i, l, acc) {
		acc = ""
		for (i = 1; i <= n; i++) {
			l = lines[i]
			sub(/^[ \t]+/, "", l)
			if (dollar) { if (l !~ /^\$ /) continue; sub(/^\$ /, "", l) }
			if (acc == "" && (l == "" || l ~ /^#/)) continue
			if (l ~ /\\$/) { sub(/[ \t]*\\$/, "", l); acc = acc l " "; continue }
			l = acc l; acc = ""
			sub(/[ \t]+#[ \t].*$/, "", l); sub(/[ \t]+$/, "", l)
			if (l != "") print l
		}
		n = 0; dollar = 0
	}
	/^[ \t]*```/ { if (inb) flush(); inb = !inb; next }
	inb { lines[++n] = $0; if ($0 ~ /^[ \t]*\$ /) dollar = 1 }
	' "$1"
}

# Read the plan into parallel arrays.
groups=() kinds=() docs=() cmds=() forms=() gof=()
g= page=
while IFS= read -r line; do
	[[ -z $line ]] && continue
	case $line in
	'== '*) g=${line#== }; groups+=("$g"); continue ;;
	'@ '*) page=${line#@ }; continue ;;
	esac
	kind=${line%% *}
	rest=${line#"$kind"}
	rest=${rest#"${rest%%[! ]*}"}
	cmd=$rest form=$rest
	if [[ $kind == short || $kind == skip ]]; then cmd=${rest%% ==> *} form=${rest#* ==> }; fi
	kinds+=("$kind") docs+=("$page") cmds+=("$cmd") forms+=("$form") gof+=("$g")
done < <(plan)

passed=0 failed=0 skipped=0
ok() { echo "ok    $*"; passed=$((passed + 1)); }
bad() { echo "FAIL  $*"; failed=$((failed + 1)); }

# 1. The plan and the pages agree.
echo "== the plan against the pages"
cover_ok=1
for p in "${pages[@]}"; do
	mapfile -t listed < <(commands "$root/$p")
	for l in "${listed[@]}"; do
		found=
		for i in "${!cmds[@]}"; do
			[[ ${docs[i]} == "$p" && ${cmds[i]} == "$l" && ${kinds[i]} != do ]] && found=1 && break
		done
		[[ -n $found ]] || { bad "$p: a command the plan does not list: $l"; cover_ok=; }
	done
	for i in "${!cmds[@]}"; do
		[[ ${docs[i]} == "$p" && ${kinds[i]} != do ]] || continue
		inblock=
		for l in "${listed[@]}"; do [[ $l == "${cmds[i]}" ]] && inblock=1 && break; done
		[[ -n $inblock ]] || grep -qF -- "${cmds[i]}" "$root/$p" ||
			{ bad "$p: the plan lists a command the page no longer has: ${cmds[i]}"; cover_ok=; }
	done
done
n_run=0 n_short=0 n_skip=0
for k in "${kinds[@]}"; do
	case $k in run | reply | bg) n_run=$((n_run + 1)) ;; short) n_short=$((n_short + 1)) ;; skip) n_skip=$((n_skip + 1)) ;; esac
done
[[ -n $cover_ok ]] && ok "every documented command is in the plan: $n_run run as written, $n_short in a shorter form, $n_skip left to other checks"
for i in "${!kinds[@]}"; do
	[[ ${kinds[i]} == skip ]] && echo "      skip ${docs[i]}: ${cmds[i]}  (${forms[i]})"
done
if [[ -n $plan_only ]]; then
	echo "$passed passed, $failed failed"
	[[ $failed -eq 0 ]]
	exit
fi

# 2. Helpers the groups' shells use (exported functions).
# begin/end frame each command: end fails the group on a non-zero exit.
begin() { step_doc=$1 step_cmd=$2; printf '\n[%s] $ %s\n' "$(date +%T)" "$step_cmd"; }
end() {
	[[ $1 -eq 0 ]] && return 0
	echo "FAILED: $step_doc: $step_cmd (exit $1)"
	exit 1
}
# end_reply also fails on an error reply (redis-cli exits 0 on those). A
# BUSYGROUP in the second pass is the group the first pass made, kept in
# the node's data as in Redis.
end_reply() {
	printf '%s\n' "$2"
	end "$1"
	local first=${2%%$'\n'*}
	if [[ $first =~ ^[A-Z][A-Z_]+( |$) && $first != OK && $first != PONG ]]; then
		[[ $CHECK_PASS == 2 && $first == BUSYGROUP* ]] && return 0
		echo "FAILED: $step_doc: $step_cmd answered an error: $first"
		exit 1
	fi
}
ports_free() {
	local p
	for p in "$@"; do
		if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "SKIP: 127.0.0.1:$p is in use by another process"
			exit 77
		fi
	done
}
wait_pong() {
	local i
	for i in $(seq 600); do
		[[ $(redis-cli -p "$1" PING 2>/dev/null) == PONG ]] && return 0
		sleep 0.2
	done
	echo "no PONG on port $1 within 2 minutes"
	return 1
}
skip_unless() { "$@" || { echo "SKIP: $* failed"; exit 77; }; }
netns_usable() {
	[[ $(id -u) == 0 ]] && command -v ip >/dev/null && command -v nft >/dev/null &&
		ip netns add rsjdocs 2>/dev/null && ip netns del rsjdocs
}
# stop_pid PID: SIGTERM the children of PID (the server a `go run` started),
# then PID, and wait for it.
stop_pid() {
	local k
	for k in $(pgrep -P "$1"); do kill "$k" 2>/dev/null; done
	kill "$1" 2>/dev/null
	wait "$1" 2>/dev/null
	return 0
}
stop_bg() {
	local p
	for p in ${bg_pids[@]+"${bg_pids[@]}"}; do stop_pid "$p"; done
	bg_pids=()
}
# leftovers: every background job of the group, also after a failure
leftovers() {
	local p
	for p in $(jobs -p); do stop_pid "$p"; done
}
export -f begin end end_reply ports_free wait_pong skip_unless netns_usable stop_pid stop_bg leftovers

# script GROUP: the shell script that runs GROUP's commands.
script() {
	local i
	echo 'trap leftovers EXIT'
	echo 'trap "exit 143" TERM'
	echo 'bg_pids=()'
	printf 'cd %q || exit 1\n' "$clone"
	for i in "${!kinds[@]}"; do
		[[ ${gof[i]} == "$1" ]] || continue
		case ${kinds[i]} in
		skip) ;;
		bg)
			printf 'begin %q %q\n' "${docs[i]}" "${cmds[i]}"
			printf '%s &\n' "${forms[i]}"
			echo 'bg_pids+=($!)'
			;;
		reply)
			printf 'begin %q %q\n' "${docs[i]}" "${cmds[i]}"
			printf 'step_out=$(%s 2>&1)\n' "${forms[i]}"
			echo 'end_reply $? "$step_out"'
			;;
		*)
			if [[ ${kinds[i]} == short ]]; then
				printf 'begin %q %q\n' "${docs[i]}" "${forms[i]}  (for: ${cmds[i]})"
			else
				printf 'begin %q %q\n' "${docs[i]}" "${forms[i]}"
			fi
			printf '%s\n' "${forms[i]}"
			echo 'end $?'
			;;
		esac
	done
}

# 3. A fresh clone, the plan twice in it.
echo "== a fresh clone of $(git -C "$root" rev-parse --short HEAD) in $clone"
rm -rf "$clone"
if ! git clone -q "$root" "$clone"; then
	bad "git clone"
	echo "$passed passed, $failed failed"
	exit 1
fi
for pass in 1 2; do
	echo "== pass $pass"
	for g in "${groups[@]}"; do
		[[ -z ${DOCS_GROUPS:-} || " $DOCS_GROUPS " == *" $g "* ]] || continue
		script "$g" >"$work/logs/$g.sh"
		log=$work/logs/$pass-$g.log
		start=$(date +%s)
		CHECK_PASS=$pass timeout -k 20 900 bash "$work/logs/$g.sh" >"$log" 2>&1
		code=$?
		took=$(($(date +%s) - start))s
		case $code in
		0) ok "$g (pass $pass, $took)" ;;
		77)
			echo "SKIP  $g (pass $pass): $(grep -m1 '^SKIP' "$log")"
			skipped=$((skipped + 1))
			;;
		*)
			bad "$g (pass $pass, $took, exit $code): $(grep -m1 '^FAILED' "$log" || tail -n 1 "$log"); log $log"
			;;
		esac
	done
	dirty=$(git -C "$clone" status --porcelain)
	if [[ -z $dirty ]]; then
		ok "pass $pass leaves no file git does not ignore"
	else
		bad "pass $pass left files git does not ignore: $(echo "$dirty" | tr '\n' ' ')"
	fi
done
[[ $skipped -gt 0 ]] && echo "$skipped skipped"
if [[ $failed -eq 0 && -n $made ]]; then rm -rf "$work"; else echo "work directory $work"; fi
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
