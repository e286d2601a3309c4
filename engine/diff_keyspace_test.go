package engine_test

import (
	"bufio"
	"bytes"
	"slices"
	"strconv"
	"testing"

	"github.com/raftstream/raftstream/engine"
	"github.com/raftstream/raftstream/resp"
)

// bulkList parses a RESP2 flat array of bulk strings (KEYS) or the key
// array of a SCAN reply, returning the strings sorted, plus the cursor for
// SCAN replies.
func bulkList(t *testing.T, raw []byte, scan bool) (cursor string, out []string) {
	t.Helper()
	r := bufio.NewReader(bytes.NewReader(raw))
	line := func() string {
		l, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("parse %q: %v", raw, err)
		}
		return l[:len(l)-2]
	}
	bulk := func() string {
		n, _ := strconv.Atoi(line()[1:])
		b := make([]byte, n+2)
		if _, err := r.Read(b); err != nil {
			t.Fatal(err)
		}
		return string(b[:n])
	}
	if scan {
		line() // *2
		cursor = bulk()
	}
	n, err := strconv.Atoi(line()[1:])
	if err != nil {
		t.Fatalf("parse %q", raw)
	}
	for i := 0; i < n; i++ {
		out = append(out, bulk())
	}
	slices.Sort(out)
	return cursor, out
}

// TestDiffKeysAndScan compares KEYS (as sets: Redis's order is its hash
// table's) and full SCAN iterations with MATCH/TYPE/COUNT against
// redis-server.
func TestDiffKeysAndScan(t *testing.T) {
	addr := newDiffRedis(t)
	d := newDiffSession(t, addr, 2)
	var setup [][]string
	for i := 0; i < 60; i++ {
		k := "user:" + strconv.Itoa(i)
		if i%3 == 0 {
			setup = append(setup, []string{"XADD", k, "1-1", "f", "v"})
		} else {
			setup = append(setup, []string{"SET", k, strconv.Itoa(i)})
		}
	}
	setup = append(setup, script("SET h?llo 1", "SET hello 1", "SET hallo 1", "SET hxllo 1", "SET hllo 1",
		"SET a*b 1", "SET [x] 1", "SET x 1", "SET \\ 1")...)
	d.run(setup)
	for _, pat := range []string{"*", "user:*", "user:1*", "h?llo", "h*llo", "h[ae]llo", "h[^e]llo", "h[a-e]llo",
		"h[e-a]llo", "h\\?llo", "a\\*b", "\\[x\\]", "[", "*[", "x", "nomatch", "user:[0-2]?", "*:*5", "\\\\"} {
		want, _, _ := d.do([]string{"KEYS", pat})
		got := resp.AppendReply(nil, d.e.Exec(1, [][]byte{[]byte("KEYS"), []byte(pat)}), 2)
		_, w := bulkList(t, want, false)
		_, g := bulkList(t, got, false)
		if !slices.Equal(w, g) {
			t.Fatalf("KEYS %q: redis %q engine %q", pat, w, g)
		}
	}
	scanAll := func(exec func(args ...string) []byte, extra ...string) []string {
		var all []string
		cursor := "0"
		for i := 0; i < 1000; i++ {
			c, keys := bulkList(t, exec(append([]string{"SCAN", cursor}, extra...)...), true)
			all = append(all, keys...)
			if cursor = c; cursor == "0" {
				slices.Sort(all)
				return slices.Compact(all)
			}
		}
		t.Fatal("SCAN did not finish")
		return nil
	}
	redisExec := func(args ...string) []byte {
		r, err := d.conn.Do(args...)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	engineExec := func(args ...string) []byte {
		argv := make([][]byte, len(args))
		for i := range args {
			argv[i] = []byte(args[i])
		}
		return resp.AppendReply(nil, d.e.Exec(1, argv), 2)
	}
	for _, extra := range [][]string{nil, {"COUNT", "7"}, {"MATCH", "user:*", "COUNT", "5"}, {"TYPE", "stream"},
		{"TYPE", "STRING", "COUNT", "100"}, {"MATCH", "h*", "TYPE", "string"}, {"TYPE", "list"}} {
		w, g := scanAll(redisExec, extra...), scanAll(engineExec, extra...)
		if !slices.Equal(w, g) {
			t.Fatalf("SCAN %q: redis %q engine %q", extra, w, g)
		}
	}
}

// TestScanStableUnderChanges: keys present for a whole scan are returned
// even when other keys are added and removed between calls.
func TestScanStableUnderChanges(t *testing.T) {
	e := engine.New(engine.DefaultConfig())
	exec := func(args ...string) engine.Reply {
		argv := make([][]byte, len(args))
		for i := range args {
			argv[i] = []byte(args[i])
		}
		return e.Exec(1, argv)
	}
	for i := 0; i < 200; i++ {
		exec("SET", "k"+strconv.Itoa(i), "v")
	}
	seen := map[string]bool{}
	cursor := "0"
	for step := 0; step < 1000; step++ {
		r := exec("SCAN", cursor, "COUNT", "9").(engine.Array)
		for _, k := range r[1].(engine.Array) {
			seen[string(k.(engine.BulkString))] = true
		}
		// churn: delete and add keys that are not part of the stable set
		exec("SET", "tmp"+strconv.Itoa(step), "v")
		exec("DEL", "tmp"+strconv.Itoa(step-3))
		if cursor = string(r[0].(engine.BulkString)); cursor == "0" {
			break
		}
	}
	for i := 0; i < 200; i++ {
		if !seen["k"+strconv.Itoa(i)] {
			t.Fatalf("key k%d missed by SCAN", i)
		}
	}
}
