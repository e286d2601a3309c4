package main

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/raftstream/raftstream/jepsen/testkit"
)

// Key expiry through the server: routing, MULTI/EXEC, INFO keyspace
// (against redis-server 7.0); expiry across a failover of a real 3-node
// cluster, and across snapshots and restarts.

// expandNow is testkit.ExpandTime at the wall clock.
func expandNow(a string) string { return testkit.ExpandTime(a, time.Now()) }

// ttlClose reports whether two integer replies of a TTL-like command agree
// within tol (negative replies exactly).
func ttlClose(got, want string, tol int64) bool {
	g, err1 := strconv.ParseInt(strings.TrimSpace(strings.TrimPrefix(got, ":")), 10, 64)
	w, err2 := strconv.ParseInt(strings.TrimSpace(strings.TrimPrefix(want, ":")), 10, 64)
	if err1 != nil || err2 != nil || (g < 0 || w < 0) && g != w {
		return false
	}
	return g-w <= tol && w-g <= tol
}

// runExpireDiff is runDiff with times expanded and TTL replies compared
// within a second.
func runExpireDiff(t *testing.T, rsAddr, redisAddr string, script [][]string) {
	t.Helper()
	a, b := dial(t, rsAddr), dial(t, redisAddr)
	for i, raw := range script {
		if raw[0] == "sleep" {
			ms, _ := strconv.Atoi(raw[1])
			time.Sleep(time.Duration(ms) * time.Millisecond)
			continue
		}
		cmd := make([]string, len(raw))
		for j := range raw {
			cmd[j] = expandNow(raw[j])
		}
		got, want := do(t, a, cmd...), do(t, b, cmd...)
		if got == want {
			continue
		}
		switch strings.ToUpper(cmd[0]) {
		case "TTL", "EXPIRETIME":
			if ttlClose(got, want, 1) {
				continue
			}
		case "PTTL", "PEXPIRETIME":
			if ttlClose(got, want, 1000) {
				continue
			}
		}
		t.Errorf("step %d %q:\n raftstream: %q\n redis:      %q", i, strings.Join(cmd, " "), got, want)
	}
}

// TestDiffExpiryThroughTheServer runs every expiry command and option
// through a raftstream node and redis-server: the command table's arity and
// routing, writes through the log (relative times converted with the
// entry's time), reads at the serving node's time, and EXPIRE inside
// MULTI/EXEC (one log entry).
func TestDiffExpiryThroughTheServer(t *testing.T) {
	rs := startNode(t, "")
	redis := testkit.StartRedis(t)
	runExpireDiff(t, rs.Addr, redis, script(
		"SET k v",
		"EXPIRE k 100",
		"TTL k",
		"PEXPIRE k 100000 GT",
		"PTTL k",
		"EXPIREAT k @s+300 XX",
		"EXPIRETIME k",
		"PEXPIREAT k @ms+400000 NX",
		"PEXPIRETIME k",
		"EXPIRE k 10 lt",
		"TTL k",
		"PERSIST k",
		"TTL k",
		"EXPIRE k 100 NX XX",
		"EXPIRE k 100 GT LT",
		"EXPIRE k 100 BAD",
		"EXPIRE k x",
		"EXPIRE k 9223372036854775807",
		"PEXPIRE k 9223372036854775807",
		"EXPIRE k",
		"TTL",
		"PTTL a b",
		"EXPIRETIME",
		"PEXPIRETIME",
		"PERSIST",
		"GETEX",
		"EXPIRE k -1",
		"EXISTS k",
		"SET k v EX 100",
		"TTL k",
		"SET k v PX 100000 GET",
		"PTTL k",
		"SET k v2 KEEPTTL GET",
		"TTL k",
		"SET k v EXAT @s+200 NX",
		"SET k v PXAT @ms+200000 XX",
		"PTTL k",
		"SET k v EX 0",
		"SET k v EX 10 PX 10",
		"SET k v PXAT 1",
		"EXISTS k",
		"SET g v",
		"GETEX g EX 100",
		"TTL g",
		"GETEX g PERSIST",
		"TTL g",
		"GETEX g PXAT @ms+5000",
		"PTTL g",
		"GETEX g EXAT 1",
		"GET g",
		"GETEX g EX x",
		"XADD s 1-1 f v",
		"EXPIRE s 100",
		"XADD s 2-1 f v",
		"TTL s",
		"GETEX s",
		"RENAME s s2",
		"TTL s2",
		"TYPE s2",
		"SET short v PX 100",
		"XADD shorts 1-1 f v",
		"PEXPIRE shorts 100",
		"sleep 200",
		"EXISTS short shorts",
		"TYPE shorts",
		// a blocked read on an expired stream waits, then times out
		"XREAD BLOCK 150 STREAMS shorts 0",
		"XREAD BLOCK 150 STREAMS shorts $",
		"SCAN 0 TYPE stream",
		"KEYS short*",
		"XADD shorts 1-1 f v",
		"XLEN shorts",
		"TTL shorts",
		// MULTI/EXEC: one unit, EXPIRE and friends queued like any write
		"MULTI",
		"SET m v",
		"EXPIRE m 100",
		"PEXPIRE m 5000 LT",
		"GETEX m PERSIST",
		"EXPIRE m 50 NX",
		"EXEC",
		"TTL m",
		"MULTI",
		"EXPIRE m x",
		"EXPIRE m -1",
		"EXISTS m",
		"EXEC",
		"FLUSHALL",
		"SET a v EX 1000",
		"SET b v",
		"XADD c 1-1 f v",
		"PEXPIRE c 900000",
	))
	// INFO keyspace: keys and expires exactly (Redis's avg_ttl is an
	// estimate its cycle samples; ours is exact, checked below).
	for _, addr := range []string{rs.Addr, redis} {
		line := infoLine(t, addr, "keyspace", "db0")
		if !strings.HasPrefix(line, "keys=3,expires=2,avg_ttl=") {
			t.Errorf("%s: INFO keyspace db0:%s", addr, line)
		}
	}
	line := infoLine(t, rs.Addr, "keyspace", "db0")
	avg, _ := strconv.ParseInt(line[strings.LastIndexByte(line, '=')+1:], 10, 64)
	if want := int64(1000000+900000) / 2; avg > want || avg < want-2000 {
		t.Errorf("avg_ttl %d, want about %d", avg, want)
	}
}

// infoLine returns the value of field in INFO section (empty if absent).
func infoLine(t *testing.T, addr, section, field string) string {
	t.Helper()
	c := dial(t, addr)
	for _, l := range strings.Split(do(t, c, "INFO", section), "\r\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			return v
		}
	}
	return ""
}

// leaderAmong is leaderOfKey, but ignores the nodes in skip.
func leaderAmong(t *testing.T, nodes []*testkit.Node, skip *testkit.Node, key string) string {
	t.Helper()
	var addrs []string
	for _, n := range nodes {
		if n != skip {
			addrs = append(addrs, n.Addr)
		}
	}
	return leaderOfKey(t, addrs, key)
}

// readonlyDo runs args on addr's local replica (READONLY).
func readonlyDo(t *testing.T, addr string, args ...string) string {
	t.Helper()
	c := dial(t, addr)
	if r := do(t, c, "READONLY"); r != "+OK\r\n" {
		t.Fatalf("READONLY: %q", r)
	}
	return do(t, c, args...)
}

// TestExpiryAcrossFailoverSnapshotAndRestart, on a real 3-node cluster:
// keys that expired before the leader was killed, and one that expires
// during the election, are gone on the new leader and on every replica;
// keys with a TTL keep exactly the same expiry across the failover, a
// snapshot of every replica (RAFTSTREAM SNAPSHOT) and a restart of every
// node.
func TestExpiryAcrossFailoverSnapshotAndRestart(t *testing.T) {
	nodes := startCluster(t, 3, 1)
	addrs := addrsOf(nodes)
	leader := leaderOfKey(t, addrs, "k")
	c := dial(t, leader)
	for _, cmd := range [][]string{
		{"SET", "gone", "v", "PX", "300"},
		{"XADD", "gone:s", "1-1", "f", "v"},
		{"PEXPIRE", "gone:s", "300"},
		{"SET", "soon", "v", "PX", "1500"},
		{"SET", "keep", "v"},
		{"SET", "later", "v", "EX", "3600"},
		{"XADD", "later:s", "1-1", "f", "v"},
		{"EXPIREAT", "later:s", expandNow("@s+7200")},
	} {
		if r := do(t, c, cmd...); strings.HasPrefix(r, "-") {
			t.Fatalf("%v: %s", cmd, r)
		}
	}
	expiry := map[string]string{}
	for _, k := range []string{"later", "later:s", "soon"} {
		expiry[k] = do(t, c, "PEXPIRETIME", k)
	}
	time.Sleep(400 * time.Millisecond)
	if r := do(t, c, "EXISTS", "gone", "gone:s", "soon"); r != ":1\r\n" {
		t.Fatalf("EXISTS before the kill: %q", r)
	}
	var old *testkit.Node
	for _, n := range nodes {
		if n.Addr == leader {
			old = n
		}
	}
	old.Kill()
	newLeader := leaderAmong(t, nodes, old, "k")
	nc := dial(t, newLeader)
	for deadline := time.Now().Add(5 * time.Second); do(t, nc, "EXISTS", "soon") != ":0\r\n"; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("soon never expired on the new leader")
		}
	}
	check := func(c *testkit.Conn, where string) {
		t.Helper()
		for _, q := range []struct {
			cmd  []string
			want string
		}{
			{[]string{"EXISTS", "gone", "gone:s", "soon"}, ":0\r\n"},
			{[]string{"GET", "gone"}, "$-1\r\n"},
			{[]string{"TYPE", "gone:s"}, "+none\r\n"},
			{[]string{"TTL", "soon"}, ":-2\r\n"},
			{[]string{"DBSIZE"}, ":3\r\n"},
			{[]string{"KEYS", "*"}, "*3\r\n$4\r\nkeep\r\n$5\r\nlater\r\n$7\r\nlater:s\r\n"},
			{[]string{"PEXPIRETIME", "later"}, expiry["later"]},
			{[]string{"PEXPIRETIME", "later:s"}, expiry["later:s"]},
			{[]string{"TTL", "keep"}, ":-1\r\n"},
		} {
			if got := do(t, c, q.cmd...); got != q.want {
				t.Errorf("%s: %v = %q, want %q", where, q.cmd, got, q.want)
			}
		}
	}
	check(nc, "new leader")
	// The survivors' replicas agree (READONLY reads of each local replica).
	for _, n := range nodes {
		if n != old {
			rc := dial(t, n.Addr)
			do(t, rc, "READONLY")
			check(rc, n.Name+" (READONLY)")
		}
	}
	// Every replica's counts (INFO keyspace on a READONLY connection covers
	// the local replicas) leave the expired keys out.
	for _, n := range nodes {
		if n == old {
			continue
		}
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			info := readonlyDo(t, n.Addr, "INFO", "keyspace")
			if strings.Contains(info, "db0:keys=3,expires=2,") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: INFO keyspace db0:%s", n.Name, info)
			}
		}
	}
	// Writes keep working on expired names: a new stream, no expiry.
	if r := do(t, nc, "XADD", "gone:s", "1-1", "f", "v"); r != "$3\r\n1-1\r\n" {
		t.Fatalf("XADD on the expired stream: %q", r)
	}
	do(t, nc, "DEL", "gone:s")

	// The old leader comes back and catches up; then every replica is
	// snapshotted and every node restarted: the expiries are unchanged.
	old.Start()
	for deadline := time.Now().Add(15 * time.Second); readonlyDo(t, old.Addr, "EXISTS", "later") != ":1\r\n" || readonlyDo(t, old.Addr, "EXISTS", "gone:s") != ":0\r\n"; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the restarted node did not catch up")
		}
	}
	taken := 0
	for _, n := range nodes {
		r := do(t, dial(t, n.Addr), "RAFTSTREAM", "SNAPSHOT")
		switch r {
		case ":1\r\n":
			taken++
		case ":0\r\n": // a replica that just installed its leader's snapshot
		default:
			t.Fatalf("%s: RAFTSTREAM SNAPSHOT: %q", n.Name, r)
		}
	}
	if taken == 0 {
		t.Fatal("no replica took a snapshot")
	}
	for _, n := range nodes {
		n.Kill()
	}
	testkit.StartAll(t, nodes...)
	after := leaderOfKey(t, addrsOf(nodes), "k")
	check(dial(t, after), "after the restart")
	for _, n := range nodes {
		rc := dial(t, n.Addr)
		do(t, rc, "READONLY")
		check(rc, n.Name+" after the restart (READONLY)")
	}
}

// TestExpirySurvivesSnapshotAndRestart on one node: a snapshot taken with
// RAFTSTREAM SNAPSHOT, then a restart that recovers from it (no log entry
// after it), gives every key its expiry back, to the millisecond; a key
// that expired while the node was down is gone.
func TestExpirySurvivesSnapshotAndRestart(t *testing.T) {
	n := startNode(t, "")
	c := dial(t, n.Addr)
	for _, cmd := range [][]string{
		{"SET", "str", "v", "EX", "1000"},
		{"XADD", "s", "1-1", "f", "v"},
		{"PEXPIREAT", "s", expandNow("@ms+5000000")},
		{"SET", "brief", "v", "PX", "800"},
		{"SET", "plain", "v"},
		{"DEBUG", "RELOAD"},
	} {
		if r := do(t, c, cmd...); strings.HasPrefix(r, "-") {
			t.Fatalf("%v: %s", cmd, r)
		}
	}
	want := map[string]string{}
	for _, k := range []string{"str", "s", "brief", "plain"} {
		want[k] = do(t, c, "PEXPIRETIME", k)
	}
	if r := do(t, c, "RAFTSTREAM", "SNAPSHOT"); r != ":1\r\n" {
		t.Fatalf("RAFTSTREAM SNAPSHOT: %q", r)
	}
	n.Kill()
	time.Sleep(900 * time.Millisecond)
	n.Start()
	c = dial(t, n.Addr)
	want["brief"] = ":-2\r\n"
	for k, w := range want {
		if got := do(t, c, "PEXPIRETIME", k); got != w {
			t.Errorf("PEXPIRETIME %s after the restart: %q, want %q", k, got, w)
		}
	}
	if got := do(t, c, "DBSIZE"); got != ":3\r\n" {
		t.Errorf("DBSIZE %q", got)
	}
}
