package engine

import (
	"bytes"
	"math"
	"strconv"
	"testing"
)

func execS(e *Engine, now int64, args ...string) Reply {
	argv := make([][]byte, len(args))
	for i := range args {
		argv[i] = []byte(args[i])
	}
	return e.Exec(now, argv)
}

func TestListpackRoundTrip(t *testing.T) {
	vals := []string{"0", "1", "127", "128", "-1", "-4096", "4095", "4096", "-4097", "32767", "-32768", "32768",
		"8388607", "-8388608", "8388608", "2147483647", "-2147483648", "2147483648",
		strconv.FormatInt(math.MaxInt64, 10), strconv.FormatInt(math.MinInt64, 10), "9223372036854775808",
		"007", "-0", "+1", "1.5", "", "abc", string(bytes.Repeat([]byte{'z'}, 63)), string(bytes.Repeat([]byte{'z'}, 64)),
		string(bytes.Repeat([]byte{'y'}, 4095)), string(bytes.Repeat([]byte{'y'}, 4096)), string(bytes.Repeat([]byte{'w'}, 20000))}
	lp := lpNew(0)
	lp = lp[:len(lp)-1]
	for _, v := range vals {
		before := len(lp)
		lp = lpEncodeString(lp, []byte(v))
		if got := len(lp) - before; got != lpElementSize([]byte(v)) {
			t.Fatalf("%q: encoded %d bytes, size says %d", v, got, lpElementSize([]byte(v)))
		}
	}
	lp = append(lp, lpEOF)
	lpSetHeader(lp, len(vals))
	off := lpHeaderSize
	for _, v := range vals {
		var e lpElem
		e, off = lpDecode(lp, off)
		if got := string(e.appendText(nil)); got != v {
			t.Fatalf("decoded %q, want %q", got, v)
		}
		if !e.equal([]byte(v)) {
			t.Fatalf("equal(%q) false", v)
		}
	}
	if lp[off] != lpEOF || off != len(lp)-1 {
		t.Fatalf("trailing bytes at %d of %d", off, len(lp))
	}
	// Replacing an integer with one of another size keeps the framing.
	lp2 := lpReplaceInt(bytes.Clone(lp), lpHeaderSize, 100000)
	if e, _ := lpDecode(lp2, lpHeaderSize); e.Int != 100000 || len(lp2) != len(lp)+3 {
		t.Fatalf("replace: %v len %d vs %d", e, len(lp2), len(lp))
	}
}

func TestXAddAutoID(t *testing.T) {
	e := New(DefaultConfig())
	if r := execS(e, 1000, "XADD", "s", "*", "f", "v"); replyText(r) != `"1000-0"` {
		t.Fatalf("got %s", replyText(r))
	}
	if r := execS(e, 1000, "XADD", "s", "*", "f", "v"); replyText(r) != `"1000-1"` {
		t.Fatalf("got %s", replyText(r))
	}
	// Clock going backwards: the sequence keeps growing on the last ms.
	if r := execS(e, 900, "XADD", "s", "*", "f", "v"); replyText(r) != `"1000-2"` {
		t.Fatalf("got %s", replyText(r))
	}
	if r := execS(e, 2000, "XADD", "s", "*", "f", "v"); replyText(r) != `"2000-0"` {
		t.Fatalf("got %s", replyText(r))
	}
	execS(e, 1, "XADD", "m", "18446744073709551615-18446744073709551614", "f", "v")
	if r := execS(e, 5, "XADD", "m", "*", "f", "v"); replyText(r) != `"18446744073709551615-18446744073709551615"` {
		t.Fatalf("got %s", replyText(r))
	}
	if r := execS(e, 5, "XADD", "m", "*", "f", "v"); r != errStreamExhausted {
		t.Fatalf("got %s", replyText(r))
	}
}

// TestXReadLast covers XREAD's "+" ID (Redis 7.4): the last entry.
func TestXReadLast(t *testing.T) {
	e := New(DefaultConfig())
	if r := execS(e, 1, "XREAD", "STREAMS", "s", "+"); r != (NullArray{}) {
		t.Fatalf("missing key: %s", replyText(r))
	}
	execS(e, 1, "XADD", "s", "1-1", "a", "1")
	execS(e, 1, "XADD", "s", "2-1", "b", "2")
	execS(e, 1, "XADD", "t", "5-5", "c", "3")
	want := `["s" [["2-1" ["b" "2"]]] "t" [["5-5" ["c" "3"]]]]`
	if r := execS(e, 1, "XREAD", "COUNT", "10", "STREAMS", "s", "t", "+", "+"); replyText(r) != want {
		t.Fatalf("got %s", replyText(r))
	}
	execS(e, 1, "XDEL", "s", "2-1")
	if r := execS(e, 1, "XREAD", "STREAMS", "s", "+"); r != (NullArray{}) {
		t.Fatalf("deleted last entry: %s", replyText(r))
	}
}

// TestStream74Replies checks replies where Redis 7.4 differs from the 7.0
// the differential tests run against (7.4's t_stream.c).
func TestStream74Replies(t *testing.T) {
	e := New(DefaultConfig())
	unbalanced := "-ERR Unbalanced 'xread' list of streams: for each stream key an ID or '$' must be specified."
	below := "-ERR The ID specified in XSETID is smaller than current max_deleted_entry_id"
	runSteps(t, e, []step{
		{1, "XREAD STREAMS s t 0", unbalanced},
		{1, "XREAD COUNT 1 STREAMS s t u 0 0", unbalanced},
		{1, "XREAD STREAMS STREAMS s 0", unbalanced},
		{1, "XADD s 1-1 f 1", "1-1"},
		{1, "XADD s 2-1 f 2", "2-1"},
		{1, "XADD s 3-1 f 3", "3-1"},
		{1, "XDEL s 2-1 3-1", "2"},
		// 7.0 takes 2-0 (above the top item 1-1) and would let XADD
		// reuse the deleted 2-1.
		{1, "XSETID s 2-0", below},
		// The current max-deleted-entry-id is checked before a new one
		// given with MAXDELETEDID replaces it.
		{1, "XSETID s 3-0 MAXDELETEDID 1-0", below},
		// Checked before the top item: this ID is below both.
		{1, "XSETID s 0-5", below},
		{1, "XSETID s 3-1", "+OK"},
		{1, "XADD s 3-1 f 4", "-ERR The ID specified in XADD is equal or smaller than the target stream top item"},
		// An emptied stream keeps its max-deleted-entry-id.
		{1, "XTRIM s MAXLEN 0", "1"},
		{1, "XSETID s 3-0", below},
		{1, "XSETID s 4-0", "+OK"},
	})
}

func TestXReadBlockParsed(t *testing.T) {
	e := New(DefaultConfig())
	if r := execS(e, 100, "XREAD", "BLOCK", "0", "STREAMS", "s", "$"); r != (NullArray{}) {
		t.Fatalf("got %s", replyText(r))
	}
	if r := execS(e, 100, "XREAD", "BLOCK", "9223372036854775800", "STREAMS", "s", "$"); r != errTimeoutRange {
		t.Fatalf("got %s", replyText(r))
	}
	if err := Validate(100, [][]byte{[]byte("XREAD"), []byte("BLOCK"), []byte("-1"), []byte("STREAMS"), []byte("s"), []byte("$")}); err != nil {
		// XREAD is a read: it has no validator.
		t.Fatalf("xread validator: %v", err)
	}
}

func TestSignals(t *testing.T) {
	e := New(DefaultConfig())
	execS(e, 1, "SET", "str", "v")
	execS(e, 1, "XADD", "a", "1-1", "f", "v")
	execS(e, 1, "XADD", "b", "1-1", "f", "v")
	execS(e, 1, "XADD", "a", "2-1", "f", "v")
	if got := e.TakeSignaled(); len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Fatalf("XADD signals %q", got)
	}
	execS(e, 1, "XADD", "a", "1-1", "f", "v") // fails: no signal
	execS(e, 1, "DEL", "str")
	if got := e.TakeSignaled(); len(got) != 0 {
		t.Fatalf("unexpected signals %q", got)
	}
	execS(e, 1, "DEL", "a")
	if got := e.TakeSignaled(); len(got) != 1 || got[0] != "a" {
		t.Fatalf("DEL signals %q", got)
	}
	execS(e, 1, "FLUSHALL")
	if got := e.TakeSignaled(); len(got) != 1 || got[0] != "b" {
		t.Fatalf("FLUSHALL signals %q", got)
	}
}

// TestValidateMatchesExec: for every write command the validator rejects,
// Exec returns the same error on an empty engine and on one holding the key.
func TestValidateMatchesExec(t *testing.T) {
	bad := [][]string{
		{"XADD", "s"}, {"XADD", "s", "MAXLEN", "x", "*", "f", "v"}, {"XADD", "s", "LIMIT", "5", "*", "f", "v"},
		{"XADD", "s", "MAXLEN", "5", "LIMIT", "5", "*", "f", "v"}, {"XADD", "s", "0-0", "f", "v"},
		{"XADD", "s", "bad", "f", "v"}, {"XADD", "s", "*", "f"}, {"XTRIM", "s", "FOO"}, {"XTRIM", "s", "MAXLEN"},
		{"XTRIM", "s", "MINID", "x"}, {"XDEL", "s"}, {"XSETID", "s", "x"}, {"XSETID", "s", "5-5", "MAXDELETEDID", "9-9"},
		{"SET", "k", "v", "NX", "XX"}, {"SET", "k", "v", "EX", "0"}, {"FLUSHALL", "x"}, {"RENAME", "a"},
	}
	good := [][]string{{"XADD", "s", "*", "f", "v"}, {"XADD", "s", "MAXLEN", "~", "5", "LIMIT", "5", "1-1", "f", "v"},
		{"XTRIM", "s", "MINID", "~", "5"}, {"XDEL", "s", "1-1"}, {"XSETID", "s", "5-5"}, {"SET", "k", "v", "GET"},
		{"FLUSHALL", "ASYNC"}, {"RENAME", "a", "b"}, {"XRANGE", "s", "-", "+"}}
	for _, c := range bad {
		argv := make([][]byte, len(c))
		for i := range c {
			argv[i] = []byte(c[i])
		}
		verr := Validate(1, argv)
		if verr == nil {
			t.Fatalf("%q: validator accepted", c)
		}
		for _, e := range []*Engine{New(DefaultConfig()), func() *Engine {
			e := New(DefaultConfig())
			execS(e, 1, "XADD", "s", "1-1", "f", "v")
			execS(e, 1, "SET", "k", "v")
			return e
		}()} {
			if r := e.Exec(1, argv); replyText(r) != replyText(verr) {
				t.Fatalf("%q: Validate %s, Exec %s", c, replyText(verr), replyText(r))
			}
		}
	}
	for _, c := range good {
		argv := make([][]byte, len(c))
		for i := range c {
			argv[i] = []byte(c[i])
		}
		if verr := Validate(1, argv); verr != nil {
			t.Fatalf("%q: validator rejected: %s", c, verr.Msg)
		}
	}
}

// TestNodeSplitBytes: a node is sealed when its listpack size plus the raw
// length of the new fields would reach stream-node-max-bytes, so a node
// exceeds the cap by at most one entry's encoding overhead (the exact rule
// is checked against redis-server in TestDiffRaxShape).
func TestNodeSplitBytes(t *testing.T) {
	e := New(Config{NodeMaxBytes: 200, NodeMaxEntries: 0})
	for i := 1; i <= 50; i++ {
		execS(e, 1, "XADD", "s", strconv.Itoa(i)+"-0", "field", strconv.Itoa(i*1000))
	}
	s := e.keys["s"].Stream
	for i := range s.rax.nodes {
		n := &s.rax.nodes[i]
		if len(n.lp) >= 200+16 {
			t.Fatalf("node %d is %d bytes", i, len(n.lp))
		}
	}
	if s.RaxKeys() < 3 {
		t.Fatalf("only %d nodes", s.RaxKeys())
	}
}
