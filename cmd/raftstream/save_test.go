package main

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/raftstream/raftstream/jepsen/testkit"
)

// TestSaveBgsaveLastsaveMatchRedis holds SAVE, BGSAVE and LASTSAVE to
// redis-server's replies, byte for byte: the table rows (COMMAND INFO),
// argument errors, SAVE refused inside MULTI and BGSAVE scheduled inside
// it, both refused while a BGSAVE runs, and LASTSAVE's time (the start
// before any save, then the end of the last one).
func TestSaveBgsaveLastsaveMatchRedis(t *testing.T) {
	rs := startNode(t, "")
	redis := testkit.StartRedis(t)
	startedBy := time.Now().Unix()
	for _, addr := range []string{rs.Addr, redis} {
		c := dial(t, addr)
		if got := lastsave(t, c); got > startedBy || got < startedBy-60 {
			t.Errorf("%s: LASTSAVE %d before any save, want the server's start (about %d)", addr, got, startedBy)
		}
	}
	// The rows: LASTSAVE's tip is a bulk string in Redis's reply and a
	// simple string in raftstream's (every command's tips are; TestCommandTable
	// in resp compares them by shape), the rest is identical.
	info := []string{"COMMAND", "INFO", "save", "bgsave", "lastsave"}
	tip := strings.NewReplacer("$23\r\nnondeterministic_output", "+nondeterministic_output")
	if got, want := do(t, dial(t, rs.Addr), info...), tip.Replace(do(t, dial(t, redis), info...)); got != want {
		t.Errorf("COMMAND INFO save bgsave lastsave:\n raftstream: %q\n redis:      %q", got, want)
	}
	runDiff(t, rs.Addr, redis, script(
		"SAVE x",
		"LASTSAVE x",
		"BGSAVE foo",
		"BGSAVE a b",
		"MULTI",
		"SAVE",
		"LASTSAVE",
		"EXEC",
		"SAVE",
	))
	for _, addr := range []string{rs.Addr, redis} {
		c := dial(t, addr)
		before := time.Now().Unix()
		if got := do(t, c, "SAVE"); got != "+OK\r\n" {
			t.Fatalf("%s: SAVE %q", addr, got)
		}
		if got := lastsave(t, c); got < before || got > time.Now().Unix() {
			t.Errorf("%s: LASTSAVE %d after a SAVE begun at %d", addr, got, before)
		}
	}
	runDiff(t, rs.Addr, redis, script("MULTI", "BGSAVE", "EXEC"))
	awaitSave(t, rs.Addr)
	awaitSave(t, redis)

	// Enough data that a snapshot takes a while: a BGSAVE, then BGSAVE and
	// SAVE while it runs, sent together.
	for _, addr := range []string{rs.Addr, redis} {
		fill(t, addr)
	}
	var replies [2]string
	for i, addr := range []string{rs.Addr, redis} {
		replies[i] = pipeline(t, addr, []string{"BGSAVE"}, []string{"BGSAVE", "SCHEDULE"}, []string{"SAVE"})
		awaitSave(t, addr)
	}
	want := "+Background saving started\r\n-ERR Background save already in progress\r\n-ERR Background save already in progress\r\n"
	if replies[0] != replies[1] || replies[1] != want {
		t.Errorf("BGSAVE while one runs:\n raftstream: %q\n redis:      %q\n want        %q", replies[0], replies[1], want)
	}
}

func lastsave(t *testing.T, c *testkit.Conn) int64 {
	t.Helper()
	r := do(t, c, "LASTSAVE")
	n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(r, ":"), "\r\n"), 10, 64)
	if err != nil {
		t.Fatalf("LASTSAVE %q", r)
	}
	return n
}

// awaitSave waits until a SAVE succeeds at addr: no BGSAVE runs any more.
func awaitSave(t *testing.T, addr string) {
	t.Helper()
	c := dial(t, addr)
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		r := do(t, c, "SAVE")
		if r == "+OK\r\n" {
			return
		}
		if r != "-ERR Background save already in progress\r\n" || time.Now().After(deadline) {
			t.Fatalf("%s: SAVE %q", addr, r)
		}
	}
}

// fill writes about 40 MB of stream entries at addr.
func fill(t *testing.T, addr string) {
	t.Helper()
	val := strings.Repeat("v", 4000)
	var cmds [][]string
	for i := range 10000 {
		cmds = append(cmds, []string{"XADD", fmt.Sprintf("fill:%d", i%16), "*", "p", val})
	}
	pipeline(t, addr, cmds...)
}

// pipeline sends cmds at once on a new connection and returns their
// replies, concatenated.
func pipeline(t *testing.T, addr string, cmds ...[]string) string {
	t.Helper()
	c := dial(t, addr)
	var raw []byte
	for _, cmd := range cmds {
		raw = append(raw, testkit.EncodeCommand(cmd...)...)
	}
	if err := c.WriteRaw(raw); err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	for range cmds {
		r, err := c.ReadReply()
		if err != nil {
			t.Fatal(err)
		}
		sb.Write(r)
	}
	return sb.String()
}
