package main

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/raftstream/raftstream/jepsen/testkit"
)

// TestDiffWait compares WAIT with redis-server 7.0 byte for byte on a
// single node, which, like a standalone Redis, has no replicas: argument
// errors in Redis's words and order, a satisfied WAIT answering at once, an
// unsatisfiable one answering 0 after its timeout, and WAIT inside MULTI
// never blocking. Timing is checked too: a step given a wait must take at
// least that long on both servers (Redis checks timeouts 10 times a
// second, so it takes up to 100 ms longer), and the others return at once.
func TestDiffWait(t *testing.T) {
	rs := startNode(t, "")
	redis := testkit.StartRedis(t)
	a, b := dial(t, rs.Addr), dial(t, redis)
	steps := []struct {
		cmd  string
		wait time.Duration
	}{
		{"WAIT", 0},
		{"WAIT 0", 0},
		{"WAIT 0 0 0", 0},
		{"WAIT x 0", 0},
		{"WAIT 1.5 0", 0},
		{"WAIT 99999999999999999999 0", 0},
		{"WAIT 0 x", 0},
		{"WAIT 0 1.5", 0},
		{"WAIT 0 -1", 0},
		{"WAIT x -1", 0},
		{"WAIT 2 9223372036854775808", 0},
		{"WAIT 0 0", 0},
		{"WAIT -5 100", 0},
		{"WAIT 1 150", 150 * time.Millisecond},
		{"XADD s 1-1 f v", 0},
		{"WAIT 0 0", 0},
		{"WAIT 1 120", 120 * time.Millisecond},
		{"MULTI", 0},
		{"XADD s 2-1 f v", 0},
		{"WAIT 1 0", 0},
		{"WAIT x 0", 0},
		{"EXEC", 0},
		{"MULTI", 0},
		{"WAIT 1 2000", 0},
		{"EXEC", 0},
		{"wait 0 10", 0},
	}
	for i, st := range steps {
		cmd := strings.Fields(st.cmd)
		t0 := time.Now()
		got := do(t, a, cmd...)
		tookRS := time.Since(t0)
		t0 = time.Now()
		want := do(t, b, cmd...)
		tookRedis := time.Since(t0)
		if got != want {
			t.Errorf("step %d %q:\n raftstream: %q\n redis:      %q", i, st.cmd, got, want)
		}
		if tookRS < st.wait || tookRS > st.wait+100*time.Millisecond || tookRedis < st.wait {
			t.Errorf("step %d %q took %v here and %v in Redis, want %v", i, st.cmd, tookRS, tookRedis, st.wait)
		}
	}
	// Redis 7.2 refuses a timeout whose deadline would overflow (its
	// tests/unit/wait.tcl); 7.0 lets it overflow, so this is not diffed.
	if r := do(t, a, "WAIT", "2", "9223372036854775807"); r != "-ERR timeout is out of range\r\n" {
		t.Errorf("WAIT 2 LLONG_MAX = %q", r)
	}
}

// TestWaitAOFAsDocumented checks WAITAOF (Redis 7.2; redis-server 7.0 has
// none) on a single node against its documentation and Redis 7.2's
// argument checks: numlocal 0 or 1, numreplicas >= 0, the timeout as
// WAIT's; the reply [local fsynced, replicas fsynced]. appendonly is always
// yes here and the log is fsynced before a write is answered, so the local
// count is 1, even before any write (offset 0, as Redis with AOF on).
func TestWaitAOFAsDocumented(t *testing.T) {
	n := startNode(t, "")
	c := dial(t, n.Addr)
	for _, tc := range []struct {
		cmd, want string
		atLeast   time.Duration // the reply must not come sooner
	}{
		{"WAITAOF", "-ERR wrong number of arguments for 'waitaof' command\r\n", 0},
		{"WAITAOF 0 0", "-ERR wrong number of arguments for 'waitaof' command\r\n", 0},
		{"WAITAOF x 0 0", "-ERR value is not an integer or out of range\r\n", 0},
		{"WAITAOF 2 0 0", "-ERR value is out of range, value must between 0 and 1\r\n", 0},
		{"WAITAOF -1 0 0", "-ERR value is out of range, value must between 0 and 1\r\n", 0},
		{"WAITAOF 0 x 0", "-ERR value is not an integer or out of range\r\n", 0},
		{"WAITAOF 0 -1 0", "-ERR value is out of range, must be positive\r\n", 0},
		{"WAITAOF 0 0 x", "-ERR timeout is not an integer or out of range\r\n", 0},
		{"WAITAOF 0 0 -1", "-ERR timeout is negative\r\n", 0},
		{"WAITAOF 2 -1 -1", "-ERR value is out of range, value must between 0 and 1\r\n", 0},
		{"WAITAOF 0 0 0", "*2\r\n:1\r\n:0\r\n", 0},
		{"XADD s 1-1 f v", "$3\r\n1-1\r\n", 0},
		{"WAITAOF 1 0 0", "*2\r\n:1\r\n:0\r\n", 0},
		{"WAITAOF 1 1 150", "*2\r\n:1\r\n:0\r\n", 150 * time.Millisecond},
		{"MULTI", "+OK\r\n", 0},
		{"WAITAOF 1 1 0", "+QUEUED\r\n", 0},
		{"EXEC", "*1\r\n*2\r\n:1\r\n:0\r\n", 0},
	} {
		t0 := time.Now()
		got := do(t, c, strings.Fields(tc.cmd)...)
		took := time.Since(t0)
		if got != tc.want {
			t.Errorf("%s = %q, want %q", tc.cmd, got, tc.want)
		}
		if took < tc.atLeast || took > tc.atLeast+time.Second {
			t.Errorf("%s took %v, want %v (+ < 1 s)", tc.cmd, took, tc.atLeast)
		}
	}
}

// TestWaitCountsReplicasThatStored runs three real processes (RF 3) and
// WAITs on the leader of a key's shard: 2 after a write with both
// followers up; 1 after the timeout with one follower SIGSTOPped; 2 again
// once it runs (SIGCONT) and has caught up; at once, without waiting, when
// the followers already hold the write; WAITAOF answers the same replicas.
func TestWaitCountsReplicasThatStored(t *testing.T) {
	nodes := startCluster(t, 3, 3)
	addrs := addrsOf(nodes)
	const key = "orders"
	leader := leaderOfKey(t, addrs, key)
	c := dial(t, leader)
	timed := func(args ...string) (string, time.Duration) {
		t.Helper()
		t0 := time.Now()
		r := do(t, c, args...)
		return r, time.Since(t0)
	}
	xadd := func() {
		t.Helper()
		if r := do(t, c, "XADD", key, "*", "f", "v"); !strings.HasPrefix(r, "$") {
			t.Fatalf("XADD on the shard's leader: %q", r)
		}
	}

	// A connection that wrote nothing counts the connected replicas.
	fresh := dial(t, leader)
	if r := do(t, fresh, "WAIT", "2", "5000"); r != ":2\r\n" {
		t.Errorf("WAIT 2 on a connection that wrote nothing = %q, want :2", r)
	}

	xadd()
	r, took := timed("WAIT", "2", "5000")
	if r != ":2\r\n" {
		t.Fatalf("WAIT 2 5000 after a write, both followers up = %q (after %v), want :2", r, took)
	}
	t.Logf("WAIT 2 after a write: %v", took)
	// Satisfied already: answered at once (timeout 0 would wait forever).
	r, took = timed("WAIT", "2", "0")
	if r != ":2\r\n" || took > 100*time.Millisecond {
		t.Errorf("WAIT 2 0 when already satisfied = %q after %v, want :2 at once", r, took)
	}
	t.Logf("WAIT 2 0 when already satisfied: %v", took)
	if r := do(t, c, "WAITAOF", "1", "2", "5000"); r != "*2\r\n:1\r\n:2\r\n" {
		t.Errorf("WAITAOF 1 2 5000 = %q, want [1 2]", r)
	}

	var stopped int
	for i, a := range addrs {
		if a != leader {
			stopped = i
			break
		}
	}
	if err := syscall.Kill(nodes[stopped].Pid(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			_ = syscall.Kill(nodes[stopped].Pid(), syscall.SIGCONT)
		}
	}
	defer resume()
	xadd() // a majority (the leader and the other follower) still commits
	const timeout = 1000 * time.Millisecond
	r, took = timed("WAIT", "2", fmt.Sprint(timeout.Milliseconds()))
	if r != ":1\r\n" || took < timeout || took > timeout+time.Second {
		t.Errorf("WAIT 2 %v with a follower stopped = %q after %v, want :1 after the timeout", timeout, r, took)
	}
	t.Logf("WAIT 2 %v with a follower stopped: %q after %v", timeout, r, took)
	r, took = timed("WAIT", "1", "5000")
	if r != ":1\r\n" || took > 100*time.Millisecond {
		t.Errorf("WAIT 1 with a follower stopped = %q after %v, want :1 at once", r, took)
	}
	if r := do(t, c, "WAITAOF", "1", "2", "300"); r != "*2\r\n:1\r\n:1\r\n" {
		t.Errorf("WAITAOF 1 2 300 with a follower stopped = %q, want [1 1]", r)
	}

	resume()
	r, took = timed("WAIT", "2", "10000")
	if r != ":2\r\n" {
		t.Errorf("WAIT 2 10000 after SIGCONT = %q after %v, want :2", r, took)
	}
	t.Logf("WAIT 2 after SIGCONT: %v (the follower catching up)", took)
}
