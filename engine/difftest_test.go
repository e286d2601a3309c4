package engine_test

// The differential harness: a script of commands runs against a real
// redis-server and against engine.New, and every reply is compared byte for
// byte (RESP2, then RESP3 on a fresh keyspace).
//
// Script conventions (a command is a []string):
//   - CONFIG SET of the stream-node-* parameters is a command like the
//     others (the engine executes it: config.go), compared too.
//   - a first element "!" runs the rest on both sides without comparing the
//     replies (time-dependent replies such as XADD with "*").
//   - a first element "@now" followed by a number sets the `now` (Unix ms)
//     passed to the engine's Exec; default diffNow.
//
// The consumer-group tests in this package use runDiff too.

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/raftstream/raftstream/engine"
	"github.com/raftstream/raftstream/jepsen/testkit"
	"github.com/raftstream/raftstream/resp"
)

// diffNow is the engine's clock in differential scripts unless "@now" says
// otherwise.
const diffNow = 1_700_000_000_000

// diffSession is one side-by-side run: a redis connection and an engine.
type diffSession struct {
	t     testing.TB
	conn  *testkit.Conn
	e     *engine.Engine
	proto int
	now   int64
}

// newDiffRedis starts a redis-server for the test.
func newDiffRedis(t testing.TB) string {
	t.Helper()
	return testkit.StartRedis(t)
}

// newDiffSession opens a connection to addr speaking proto (2 or 3), flushes
// it, resets the stream node config to defaults and returns a session with a
// fresh engine.
func newDiffSession(t testing.TB, addr string, proto int) *diffSession {
	t.Helper()
	c, err := testkit.Dial(addr)
	if err != nil {
		t.Fatalf("dial redis: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	if proto == 3 {
		if r, err := c.Do("HELLO", "3"); err != nil || len(r) == 0 || r[0] != '%' {
			t.Fatalf("HELLO 3: %q %v", r, err)
		}
	}
	for _, cmd := range [][]string{{"FLUSHALL"}, {"CONFIG", "SET", "stream-node-max-entries", "100"},
		{"CONFIG", "SET", "stream-node-max-bytes", "4096"}} {
		if r, err := c.Do(cmd...); err != nil || string(r) != "+OK\r\n" {
			t.Fatalf("%v: %q %v", cmd, r, err)
		}
	}
	return &diffSession{t: t, conn: c, e: engine.New(engine.DefaultConfig()), proto: proto, now: diffNow}
}

// do runs one command on both sides and returns (redis reply, engine reply),
// raw RESP bytes. It handles the harness directives above; compare reports
// whether the caller should compare the two.
func (d *diffSession) do(cmd []string) (want, got []byte, compare bool) {
	d.t.Helper()
	compare = true
	if len(cmd) > 0 && cmd[0] == "@now" {
		n, err := strconv.ParseInt(cmd[1], 10, 64)
		if err != nil {
			d.t.Fatalf("bad @now %v", cmd)
		}
		d.now = n
		return nil, nil, false
	}
	if len(cmd) > 0 && cmd[0] == "!" {
		cmd, compare = cmd[1:], false
	}
	want, err := d.conn.Do(cmd...)
	if err != nil {
		d.t.Fatalf("redis %v: %v", cmd, err)
	}
	argv := make([][]byte, len(cmd))
	for i, a := range cmd {
		argv[i] = []byte(a)
	}
	got = resp.AppendReply(nil, d.e.Exec(d.now, argv), d.proto)
	return want, got, compare
}

// run executes a script, failing the test at the first differing reply.
func (d *diffSession) run(cmds [][]string) {
	d.t.Helper()
	for i, cmd := range cmds {
		want, got, compare := d.do(cmd)
		if compare && !bytes.Equal(want, got) {
			d.t.Fatalf("RESP%d step %d %q:\nredis:  %q\nengine: %q", d.proto, i, cmd, want, got)
		}
	}
}

// runDiff runs cmds against a fresh redis-server and a fresh engine, in
// RESP2 and then (on a flushed keyspace and fresh engine) in RESP3, and fails
// the test at the first reply that differs byte for byte.
func runDiff(t *testing.T, cmds [][]string) {
	t.Helper()
	addr := newDiffRedis(t)
	runDiffOn(t, addr, cmds)
}

// runDiffOn is runDiff against an already started redis at addr (lets a test
// run many scripts on one server).
func runDiffOn(t *testing.T, addr string, cmds [][]string) {
	t.Helper()
	for _, proto := range []int{2, 3} {
		newDiffSession(t, addr, proto).run(cmds)
	}
}

// script splits each line on spaces into a command; handy for short scripts
// whose arguments have no spaces.
func script(lines ...string) [][]string {
	out := make([][]string, 0, len(lines))
	for _, l := range lines {
		out = append(out, strings.Fields(l))
	}
	return out
}

// TestDiffHarness checks the harness itself: a mismatch must be detected.
func TestDiffHarness(t *testing.T) {
	addr := newDiffRedis(t)
	d := newDiffSession(t, addr, 2)
	want, got, _ := d.do([]string{"PING-NOT-A-COMMAND"})
	if bytes.Equal(want, got) {
		// Redis and the engine word unknown commands differently (Redis adds
		// the argument list); if they ever agree, the comparison still ran.
		t.Logf("unknown command replies agree: %q", want)
	}
	if len(want) == 0 || want[0] != '-' || len(got) == 0 || got[0] != '-' {
		t.Fatalf("expected errors from both sides, got %q / %q", want, got)
	}
}
