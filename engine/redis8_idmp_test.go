package engine

import (
	"bytes"
	"fmt"
	"testing"
)

// Idempotent producers (Redis 8.6), following the documentation.

func TestXAddIdmp(t *testing.T) {
	e := New(DefaultConfig())
	runSteps(t, e, []step{
		{1000, "XADD s IDMP p1 i1 * f 1", "1000-0"},
		{1001, "XADD s IDMP p1 i1 * f other", "1000-0"}, // duplicate: original ID, nothing added
		{1001, "XADD s IDMP p2 i1 * f 1", "1001-0"},     // another producer
		{1002, "XADD s IDMP p1 i2 * f 1", "1002-0"},
		{1002, "XLEN s", "3"},
		// Still a duplicate after the entry is deleted.
		{1003, "XDEL s 1000-0", "1"},
		{1003, "XADD s IDMP p1 i1 * f 1", "1000-0"},
		{1003, "XLEN s", "2"},
		// IDMPAUTO ignores pair order.
		{1004, "XADD s IDMPAUTO p3 * a 1 b 2", "1004-0"},
		{1005, "XADD s IDMPAUTO p3 * b 2 a 1", "1004-0"},
		{1005, "XADD s IDMPAUTO p3 * a 2 b 1", "1005-0"},
		{1006, "XADD s NOMKSTREAM MAXLEN 10 IDMPAUTO p3 * a 1 b 2", "1004-0"},
		// Options combine with trimming and NOMKSTREAM.
		{1007, "XADD s MAXLEN 2 IDMP p4 x * f 1", "1007-0"},
		{1007, "XLEN s", "2"},
		{1007, "XADD nokey NOMKSTREAM IDMP p x * f 1", "nil"},
		{1007, "XINFO STREAM s", "[length 2 radix-tree-keys 1 radix-tree-nodes 2 last-generated-id 1007-0 max-deleted-entry-id 1000-0 entries-added 6 recorded-first-entry-id 1005-0 idmp-duration 100 idmp-maxsize 100 pids-tracked 4 iids-tracked 6 iids-added 6 iids-duplicates 4 groups 0 first-entry [1005-0 [a 2 b 1]] last-entry [1007-0 [f 1]]]"},
	})
	// XINFO STREAM FULL carries the fields too, at the same place; so does
	// a stream that never used IDMP (t_stream.c xinfoReplyWithStreamInfo).
	if got := run(e, 1008, "XINFO STREAM s FULL"); !bytes.Contains([]byte(got), []byte("recorded-first-entry-id 1005-0 idmp-duration 100 idmp-maxsize 100 pids-tracked 4 iids-tracked 6 iids-added 6 iids-duplicates 4 entries")) {
		t.Fatalf("XINFO STREAM FULL: %s", got)
	}
	run(e, 1008, "XADD plain 1-1 f v")
	if got, want := run(e, 1008, "XINFO STREAM plain"), "[length 1 radix-tree-keys 1 radix-tree-nodes 2 last-generated-id 1-1 max-deleted-entry-id 0-0 entries-added 1 recorded-first-entry-id 1-1 idmp-duration 100 idmp-maxsize 100 pids-tracked 0 iids-tracked 0 iids-added 0 iids-duplicates 0 groups 0 first-entry [1-1 [f v]] last-entry [1-1 [f v]]]"; got != want {
		t.Fatalf("stream without IDMP:\n got  %s\n want %s", got, want)
	}
}

func TestIdmpExpiryAndMaxSize(t *testing.T) {
	e := New(Config{NodeMaxEntries: 100, IdmpDuration: 2, IdmpMaxSize: 3})
	runSteps(t, e, []step{
		{1000, "XADD s IDMP p a * f 1", "1000-0"},
		{2999, "XADD s IDMP p a * f 1", "1000-0"}, // 1999 ms < 2 s
		{3000, "XADD s IDMP p a * f 1", "3000-0"}, // expired at 2 s
		{3001, "XADD s IDMP p b * f 1", "3001-0"},
		{3002, "XADD s IDMP p c * f 1", "3002-0"},
		{3003, "XADD s IDMP p d * f 1", "3003-0"}, // evicts a (max size 3)
		{3004, "XADD s IDMP p a * f 1", "3004-0"}, // evicts b
		{3004, "XADD s IDMP p c * f 1", "3002-0"},
		{3005, "XADD s IDMP p b * f 1", "3005-0"},
		{3005, "XINFO STREAM s", "[length 7 radix-tree-keys 1 radix-tree-nodes 2 last-generated-id 3005-0 max-deleted-entry-id 0-0 entries-added 7 recorded-first-entry-id 1000-0 idmp-duration 2 idmp-maxsize 3 pids-tracked 1 iids-tracked 3 iids-added 7 iids-duplicates 2 groups 0 first-entry [1000-0 [f 1]] last-entry [3005-0 [f 1]]]"},
		// XCFGSET: changing a value clears the history; setting the same
		// values keeps it.
		{3006, "XCFGSET s IDMP-DURATION 2 IDMP-MAXSIZE 3", "+OK"},
		{3006, "XADD s IDMP p b * f 1", "3005-0"},
		{3006, "XCFGSET s IDMP-MAXSIZE 10", "+OK"},
		{3006, "XADD s IDMP p b * f 1", "3006-0"},
		{3007, "XCFGSET s IDMP-DURATION 86400", "+OK"},
		{3007, "XINFO STREAM s", "[length 8 radix-tree-keys 1 radix-tree-nodes 2 last-generated-id 3006-0 max-deleted-entry-id 0-0 entries-added 8 recorded-first-entry-id 1000-0 idmp-duration 86400 idmp-maxsize 10 pids-tracked 0 iids-tracked 0 iids-added 8 iids-duplicates 3 groups 0 first-entry [1000-0 [f 1]] last-entry [3006-0 [f 1]]]"},
	})
}

// Error texts and their order, from t_stream.c
// (streamParseAddOrTrimArgsOrReply, xcfgsetCommand). The XCFGSET page
// (https://redis.io/docs/latest/commands/xcfgset/) names "ERR invalid
// duration" / "ERR invalid maxsize"; the server sends the range texts.
func TestIdmpErrors(t *testing.T) {
	e := New(DefaultConfig())
	run(e, 1, "XADD s 1-1 f v")
	run(e, 1, "SET str x")
	// argv splits on spaces; "" is an empty argument.
	argv := func(line string) [][]byte {
		a := argvOf(line)
		for i := range a {
			if string(a[i]) == `""` {
				a[i] = []byte{}
			}
		}
		return a
	}
	// XADD's option errors come before the key is looked up.
	for _, c := range []struct{ cmd, want string }{
		{"XADD s IDMP p i 5-1 f v", "-ERR syntax error, IDMP/IDMPAUTO can be used only with auto-generated IDs"},
		{"XADD s IDMPAUTO p 5-* f v", "-ERR syntax error, IDMP/IDMPAUTO can be used only with auto-generated IDs"},
		// Checked at the ID, before the fields' arity.
		{"XADD str IDMP p i 5-1 f", "-ERR syntax error, IDMP/IDMPAUTO can be used only with auto-generated IDs"},
		{"XADD s IDMP p i IDMPAUTO p * f v", "-ERR syntax error, IDMP/IDMPAUTO specified multiple times"},
		{"XADD s IDMPAUTO p IDMP p i * f v", "-ERR syntax error, IDMP/IDMPAUTO specified multiple times"},
		{`XADD s IDMPAUTO "" * f v`, "-ERR syntax error, IDMPAUTO requires a non-empty producer ID"},
		{`XADD s IDMP "" i * f v`, "-ERR syntax error, IDMP requires a non-empty producer ID"},
		{`XADD s IDMP p "" * f v`, "-ERR syntax error, IDMP requires a non-empty idempotent ID"},
		{"XADD s IDMP p * f v", "-" + ErrInvalidStreamID.Msg}, // iid "*", then ID "f"
	} {
		if got := fmtReply(e.Exec(2, argv(c.cmd))); got != c.want {
			t.Errorf("%s: got %s want %s", c.cmd, got, c.want)
		}
		if v := Validate(2, argv(c.cmd)); v == nil || "-"+v.Msg != c.want {
			t.Errorf("Validate(%s) = %v, want %s", c.cmd, v, c.want)
		}
	}
	// XCFGSET looks the key up first: only arity is certain beforehand.
	for _, c := range []struct{ cmd, want string }{
		{"XCFGSET s", "-ERR At least one parameter must be specified"},
		{"XCFGSET s IDMP-DURATION 0", "-ERR IDMP-DURATION must be between 1 and 86400 seconds"},
		{"XCFGSET s IDMP-DURATION 86401", "-ERR IDMP-DURATION must be between 1 and 86400 seconds"},
		{"XCFGSET s IDMP-DURATION x", "-ERR value is not an integer or out of range"},
		{"XCFGSET s IDMP-MAXSIZE 0", "-ERR IDMP-MAXSIZE must be between 1 and 10000 entries"},
		{"XCFGSET s IDMP-MAXSIZE 10001", "-ERR IDMP-MAXSIZE must be between 1 and 10000 entries"},
		{"XCFGSET s IDMP-DURATION 5 IDMP-DURATION 6", "-ERR IDMP-DURATION specified multiple times"},
		{"XCFGSET s IDMP-MAXSIZE 5 IDMP-MAXSIZE 6", "-ERR IDMP-MAXSIZE specified multiple times"},
		{"XCFGSET s IDMP-MAXSIZE", "-ERR syntax error"},
		{"XCFGSET s BOGUS 1", "-ERR syntax error"},
		{"XCFGSET nokey BOGUS 1", "-ERR no such key"},
		{"XCFGSET str IDMP-MAXSIZE 0", "-" + ErrWrongType.Msg},
	} {
		if got := run(e, 2, c.cmd); got != c.want {
			t.Errorf("%s: got %s want %s", c.cmd, got, c.want)
		}
		if v := Validate(2, argvOf(c.cmd)); v != nil {
			t.Errorf("Validate(%s) = %v, want nil", c.cmd, v)
		}
	}
	if v := Validate(2, argvOf("XCFGSET")); v == nil || v.Msg != "ERR wrong number of arguments for 'xcfgset' command" {
		t.Errorf("Validate(XCFGSET) = %v", v)
	}
	runSteps(t, e, []step{
		{2, "XLEN s", "1"},
		{2, "XINFO STREAM s", "[length 1 radix-tree-keys 1 radix-tree-nodes 2 last-generated-id 1-1 max-deleted-entry-id 0-0 entries-added 1 recorded-first-entry-id 1-1 idmp-duration 100 idmp-maxsize 100 pids-tracked 0 iids-tracked 0 iids-added 0 iids-duplicates 0 groups 0 first-entry [1-1 [f v]] last-entry [1-1 [f v]]]"},
	})
}

// A remembered (pid, iid) is answered even from a stream whose last ID is
// the largest possible, before the exhausted-stream error (xaddCommand).
func TestIdmpDuplicateOnExhaustedStream(t *testing.T) {
	e := New(DefaultConfig())
	runSteps(t, e, []step{
		{5, "XADD s IDMP p i * f v", "5-0"},
		{5, "XADD s 18446744073709551615-18446744073709551615 f v", "18446744073709551615-18446744073709551615"},
		{6, "XADD s IDMP p i * f v", "5-0"},
		{6, "XADD s IDMP p j * f v", "-ERR The stream has exhausted the last possible ID, unable to add more items"},
	})
}

func TestIdmpAutoIIDOrderInsensitive(t *testing.T) {
	f := func(xs ...string) [][]byte {
		out := make([][]byte, len(xs))
		for i, x := range xs {
			out[i] = []byte(x)
		}
		return out
	}
	a := idmpAutoIID(f("a", "1", "b", "2", "c", "3"))
	if b := idmpAutoIID(f("c", "3", "a", "1", "b", "2")); a != b {
		t.Fatal("pair order changes the iid")
	}
	for _, other := range [][][]byte{f("a", "1", "b", "2"), f("a", "2", "b", "1", "c", "3"), f("a1", "", "b", "2", "c", "3"), f("a", "1", "a", "1", "b", "2", "c", "3")} {
		if idmpAutoIID(other) == a {
			t.Fatalf("%q collides", other)
		}
	}
	if len(a) != 16 {
		t.Fatalf("iid length %d", len(a))
	}
}

// TestRedis8Determinism runs the same commands on two engines and checks
// that their snapshots are byte-identical, and that a restored engine
// continues identically (IDMP tables and dead-letter settings included).
func TestRedis8Determinism(t *testing.T) {
	cmds := []string{
		"XGROUP CREATE {o} g 0 MKSTREAM",
		"XGROUP SETDLQ {o} g 2 {o}:dlq",
		"XCFGSET {o} IDMP-DURATION 5 IDMP-MAXSIZE 4",
	}
	for i := 0; i < 40; i++ {
		cmds = append(cmds,
			fmt.Sprintf("XADD {o} IDMP p%d i%d * n %d", i%3, i%7, i),
			fmt.Sprintf("XADD {o} IDMPAUTO q * n %d m %d", i%5, i%2),
			"XREADGROUP GROUP g c COUNT 2 STREAMS {o} >",
			fmt.Sprintf("XREADGROUP GROUP g d COUNT 1 CLAIM %d STREAMS {o} >", i%4*100),
			"XREADGROUP GROUP g c STREAMS {o} 0",
		)
		if i%5 == 0 {
			cmds = append(cmds, "XTRIM {o} MAXLEN ~ 10 ACKED", "XNACK {o} g FAIL IDS 1 "+fmt.Sprintf("%d-0", 1000+i*100))
		}
	}
	exec := func(e *Engine, from int) {
		for i, c := range cmds[from:] {
			e.Exec(int64(1000+(from+i)*50), argvOf(c))
		}
	}
	a, b := New(DefaultConfig()), New(DefaultConfig())
	half := len(cmds) / 2
	exec(a, 0)
	for i, c := range cmds[:half] {
		b.Exec(int64(1000+i*50), argvOf(c))
	}
	var buf bytes.Buffer
	if _, err := b.Snapshot().WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	b2, err := Restore(&buf)
	if err != nil {
		t.Fatal(err)
	}
	exec(b2, half)
	sa, sb := snapBytes(t, a), snapBytes(t, b2)
	if !bytes.Equal(sa, sb) {
		t.Fatal("same commands, different snapshot bytes")
	}
	if got := run(a, 1<<40, "XLEN {o}:dlq"); got == "0" {
		t.Fatalf("the script never dead-lettered (XLEN %s): the test lost its teeth", got)
	}
	if got := run(a, 1<<40, "XINFO STREAM {o}"); !bytes.Contains([]byte(got), []byte("iids-duplicates")) {
		t.Fatalf("no IDMP state: %s", got)
	}
}

// BenchmarkXAddIdmp measures XADD with IDMP (a new iid each time, so every
// call records and evicts) and IDMPAUTO against plain XADD *.
func BenchmarkXAddIdmp(b *testing.B) {
	for _, mode := range []string{"plain", "IDMP", "IDMPAUTO"} {
		b.Run(mode, func(b *testing.B) {
			e := New(DefaultConfig())
			argv := [][]byte{[]byte("XADD"), []byte("s"), nil, nil, nil, []byte("*"), []byte("customer"), nil, []byte("amount"), []byte("100")}
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				n := []byte(fmt.Sprint(i))
				a := argv
				switch mode {
				case "plain":
					a = append([][]byte{argv[0], argv[1]}, argv[5:]...)
				case "IDMP":
					a[2], a[3], a[4] = []byte("IDMP"), []byte("p"), n
				case "IDMPAUTO":
					a = append([][]byte{argv[0], argv[1], []byte("IDMPAUTO"), []byte("p")}, argv[5:]...)
				}
				a[len(a)-3] = n
				e.Exec(int64(i), a)
			}
		})
	}
}

// A stream keeps the stream-idmp-* values of its creation (t_stream.c
// streamNew); CONFIG SET changes the streams created after it.
func TestIdmpSettingsTakenAtCreation(t *testing.T) {
	e := New(DefaultConfig())
	run(e, 1, "XADD old 1-1 f v")
	cfg := e.Config()
	cfg.IdmpDuration, cfg.IdmpMaxSize = 7, 8
	e.SetConfig(cfg)
	run(e, 2, "XADD new 1-1 f v")
	run(e, 2, "XGROUP CREATE mk g $ MKSTREAM")
	for key, want := range map[string]string{"old": "idmp-duration 100 idmp-maxsize 100", "new": "idmp-duration 7 idmp-maxsize 8", "mk": "idmp-duration 7 idmp-maxsize 8"} {
		if got := run(e, 3, "XINFO STREAM "+key); !bytes.Contains([]byte(got), []byte(want)) {
			t.Errorf("XINFO STREAM %s: %s, want %s", key, got, want)
		}
	}
	// XCFGSET with the stream's own values keeps its history.
	runSteps(t, e, []step{
		{4, "XADD new IDMP p i * f v", "4-0"},
		{4, "XCFGSET new IDMP-DURATION 7 IDMP-MAXSIZE 8", "+OK"},
		{5, "XADD new IDMP p i * f v", "4-0"},
		{5, "XCFGSET old IDMP-DURATION 100", "+OK"},
	})
}
