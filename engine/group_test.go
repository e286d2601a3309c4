package engine

import (
	"bytes"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"
)

// Engine-level tests of consumer-group behaviour that the installed redis
// (7.0) cannot check: 7.2/7.4 additions and everything that depends on the
// clock, which here is controlled exactly through Exec's now.

// fmtReply renders a reply compactly for comparisons in tests.
func fmtReply(r Reply) string {
	if e, ok := r.(*EntryReply); ok {
		r = e.Array()
	}
	switch v := r.(type) {
	case SimpleString:
		return "+" + string(v)
	case BulkString:
		return string(v)
	case Integer:
		return fmt.Sprint(int64(v))
	case *Error:
		return "-" + v.Msg
	case NullBulk:
		return "nil"
	case NullArray:
		return "nil[]"
	case Array, Map, PairMap:
		var kids []Reply
		switch v := v.(type) {
		case Array:
			kids = v
		case Map:
			kids = v
		case PairMap:
			kids = v
		}
		parts := make([]string, len(kids))
		for i, k := range kids {
			parts[i] = fmtReply(k)
		}
		return "[" + strings.Join(parts, " ") + "]"
	}
	return fmt.Sprintf("%#v", r)
}

// testAdd appends an entry with the metadata XADD maintains.
func testAdd(e *Engine, key string, id ID, fields ...string) {
	v, ok := e.keys[key]
	if !ok {
		v = &Value{Kind: KindStream, Stream: NewStream()}
		e.keys[key] = v
	}
	s := v.Stream
	f := make([][]byte, len(fields))
	for i, x := range fields {
		f[i] = []byte(x)
	}
	s.appendEntry(e.cfg, id, f)
	s.LastID = id
	s.EntriesAdded++
	s.Length++
	if s.Length == 1 {
		s.FirstID = id
	}
}

// testDel deletes an entry with the metadata XDEL maintains.
func testDel(e *Engine, key string, id ID, tombstone bool) {
	s := e.keys[key].Stream
	if !s.deleteEntry(id) {
		return
	}
	s.Length--
	if tombstone && s.MaxDeletedID.Less(id) {
		s.MaxDeletedID = id
	}
	s.FirstID = ID{}
	if it := s.Iter(MinID, MaxID, false); it.Next() {
		s.FirstID = it.ID
	}
}

func run(e *Engine, now int64, line string) string {
	f := strings.Fields(line)
	argv := make([][]byte, len(f))
	for i, x := range f {
		argv[i] = []byte(x)
	}
	return fmtReply(e.Exec(now, argv))
}

type step struct {
	now  int64
	cmd  string
	want string
}

func runSteps(t *testing.T, e *Engine, steps []step) {
	t.Helper()
	for i, st := range steps {
		if got := run(e, st.now, st.cmd); got != st.want {
			t.Fatalf("step %d %q at %d:\n got  %s\n want %s", i, st.cmd, st.now, got, st.want)
		}
	}
}

func newTestEngine(n int) *Engine {
	e := New(DefaultConfig())
	for i := 1; i <= n; i++ {
		testAdd(e, "s", ID{uint64(i), 1}, "f", fmt.Sprint(i))
	}
	return e
}

// TestGroup74Replies checks replies where Redis 7.4 differs from the 7.0
// used by the differential tests.
func TestGroup74Replies(t *testing.T) {
	e := newTestEngine(3)
	plus := "-ERR The + ID is meaningless in the context of XREADGROUP: you want to read the history of this " +
		"consumer by specifying a proper ID, or use the > ID to get new messages. The + ID would just return an empty result set."
	runSteps(t, e, []step{
		{1, "XGROUP CREATE s g 0", "+OK"},
		{1, "XREADGROUP GROUP g c STREAMS s +", plus},
		{1, "XREADGROUP GROUP g c STREAMS s t >",
			"-ERR Unbalanced 'xreadgroup' list of streams: for each stream key an ID or '>' must be specified."},
		// XCLAIM/XAUTOCLAIM create the consumer even when they claim nothing.
		{5, "XCLAIM s g claimer 0 1-1", "[]"},
		{6, "XAUTOCLAIM s g auto 0 0", "[0-0 [] []]"},
		{7, "XINFO CONSUMERS s g", "[[name auto pending 0 idle 1 inactive -1] [name claimer pending 0 idle 2 inactive -1]]"},
		// So does an XREADGROUP that gets nothing.
		{8, "XGROUP CREATE s g2 $", "+OK"},
		{8, "XREADGROUP GROUP g2 reader STREAMS s >", "nil[]"},
		{9, "XINFO CONSUMERS s g2", "[[name reader pending 0 idle 1 inactive -1]]"},
		{7, "XGROUP HELP x", "-ERR wrong number of arguments for 'xgroup|help' command"},
		{7, "XINFO NOPE s", "-ERR unknown subcommand 'NOPE'. Try XINFO HELP."},
	})
	// 7.4 refuses a BLOCK deadline that overflows (7.0 has no check).
	runSteps(t, newTestEngine(1), []step{
		{1, "XGROUP CREATE s g 0", "+OK"},
		{1, "XREADGROUP GROUP g c BLOCK 9223372036854775807 STREAMS s >", "-ERR timeout is out of range"},
		{1, "XREADGROUP GROUP g c BLOCK 9223372036854775806 STREAMS s >", "[s [[1-1 [f 1]]]]"},
	})
	help := run(e, 1, "XINFO HELP")
	if !strings.HasSuffix(help, "+HELP +    Print this help.]") {
		t.Fatalf("XINFO HELP footer: %s", help)
	}
}

// TestGroupLag74 checks the 7.4 lag rules the 7.0 server lacks.
func TestGroupLag74(t *testing.T) {
	e := New(DefaultConfig())
	runSteps(t, e, []step{
		{1, "XGROUP CREATE s g $ MKSTREAM ENTRIESREAD 7", "+OK"},
		{1, "XINFO GROUPS s", "[[name g consumers 0 pending 0 last-delivered-id 0-0 entries-read 7 lag 0]]"},
	})
	testAdd(e, "s", ID{1, 1}, "a", "1")
	testAdd(e, "s", ID{2, 1}, "a", "2")
	// last-delivered-id before the first entry and no tombstone after it:
	// the lag is the stream length whatever entries-read says.
	runSteps(t, e, []step{
		{1, "XINFO GROUPS s", "[[name g consumers 0 pending 0 last-delivered-id 0-0 entries-read 7 lag 2]]"},
		{1, "XREADGROUP GROUP g c COUNT 1 STREAMS s >", "[s [[1-1 [a 1]]]]"},
		// entries-read was 7 but last-delivered-id (0-0) was before the first
		// entry, so 7.4 re-estimates it instead of incrementing.
		{1, "XINFO GROUPS s", "[[name g consumers 1 pending 1 last-delivered-id 1-1 entries-read 1 lag 1]]"},
	})
	testDel(e, "s", ID{1, 1}, false)
	testDel(e, "s", ID{2, 1}, false)
	runSteps(t, e, []step{
		// An emptied stream has no lag.
		{1, "XINFO GROUPS s", "[[name g consumers 1 pending 1 last-delivered-id 1-1 entries-read 1 lag 0]]"},
	})
	// A tombstone after last-delivered-id makes the lag unknown.
	e2 := newTestEngine(4)
	run(e2, 1, "XGROUP CREATE s g 1-1 ENTRIESREAD 1")
	testDel(e2, "s", ID{3, 1}, true)
	runSteps(t, e2, []step{
		{1, "XINFO GROUPS s", "[[name g consumers 0 pending 0 last-delivered-id 1-1 entries-read 1 lag nil]]"},
		{1, "XREADGROUP GROUP g c STREAMS s >", "[s [[2-1 [f 2]] [4-1 [f 4]]]]"},
		{1, "XINFO GROUPS s", "[[name g consumers 1 pending 2 last-delivered-id 4-1 entries-read 4 lag 0]]"},
	})
}

// TestGroupTimes checks every time-dependent field with a controlled clock:
// delivery times, idle, seen-time, active-time, inactive, IDLE filters and
// min-idle-time.
func TestGroupTimes(t *testing.T) {
	e := newTestEngine(4)
	runSteps(t, e, []step{
		{1000, "XGROUP CREATE s g 0", "+OK"},
		{1000, "XGROUP CREATECONSUMER s g idle", "1"},
		{1100, "XREADGROUP GROUP g a COUNT 2 STREAMS s >", "[s [[1-1 [f 1]] [2-1 [f 2]]]]"},
		{1200, "XREADGROUP GROUP g b NOACK COUNT 1 STREAMS s >", "[s [[3-1 [f 3]]]]"},
		{1300, "XREADGROUP GROUP g b STREAMS s >", "[s [[4-1 [f 4]]]]"},
		{1400, "XREADGROUP GROUP g b STREAMS s >", "nil[]"},
		{1500, "XINFO CONSUMERS s g", "[[name a pending 2 idle 400 inactive 400] [name b pending 1 idle 100 inactive 200] " +
			"[name idle pending 0 idle 500 inactive -1]]"},
		{1500, "XPENDING s g - + 10", "[[1-1 a 400 1] [2-1 a 400 1] [4-1 b 200 1]]"},
		{1500, "XPENDING s g IDLE 300 - + 10", "[[1-1 a 400 1] [2-1 a 400 1]]"},
		{1500, "XPENDING s g IDLE 401 - + 10", "[]"},
		// A history read re-delivers: new delivery time, count + 1, but the
		// consumer's active-time does not move.
		{1600, "XREADGROUP GROUP g a STREAMS s 0", "[s [[1-1 [f 1]] [2-1 [f 2]]]]"},
		{1700, "XINFO STREAM s FULL", "[length 4 radix-tree-keys 1 radix-tree-nodes 2 last-generated-id 4-1 " +
			"max-deleted-entry-id 0-0 entries-added 4 recorded-first-entry-id 1-1 idmp-duration 100 idmp-maxsize 100 pids-tracked 0 iids-tracked 0 iids-added 0 iids-duplicates 0 entries [[1-1 [f 1]] [2-1 [f 2]] [3-1 [f 3]] [4-1 [f 4]]] " +
			"groups [[name g last-delivered-id 4-1 entries-read 4 lag 0 pel-count 3 nacked-count 0 pending [[1-1 a 1600 2] [2-1 a 1600 2] [4-1 b 1300 1]] " +
			"consumers [[name a seen-time 1600 active-time 1100 pel-count 2 pending [[1-1 1600 2] [2-1 1600 2]]] " +
			"[name b seen-time 1400 active-time 1300 pel-count 1 pending [[4-1 1300 1]]] " +
			"[name idle seen-time 1000 active-time -1 pel-count 0 pending []]]]]]"},
		// min-idle-time: 4-1 is 500ms idle at 1800, 1-1 and 2-1 only 200ms.
		{1800, "XCLAIM s g c 300 1-1 4-1", "[[4-1 [f 4]]]"},
		{1800, "XAUTOCLAIM s g c 150 0 JUSTID", "[0-0 [1-1 2-1] []]"},
		{1800, "XPENDING s g - + 10", "[[1-1 c 0 2] [2-1 c 0 2] [4-1 c 0 2]]"},
		// IDLE and TIME set the delivery time; future or negative times
		// become now.
		{2000, "XCLAIM s g c 0 1-1 IDLE 700 JUSTID", "[1-1]"},
		{2000, "XCLAIM s g c 0 2-1 TIME 1500 JUSTID", "[2-1]"},
		{2000, "XCLAIM s g c 0 4-1 TIME 9000 JUSTID", "[4-1]"},
		{2000, "XPENDING s g - + 10", "[[1-1 c 700 2] [2-1 c 500 2] [4-1 c 0 2]]"},
		{2000, "XINFO CONSUMERS s g", "[[name a pending 0 idle 400 inactive 900] [name b pending 0 idle 600 inactive 700] " +
			"[name c pending 3 idle 0 inactive 0] [name idle pending 0 idle 1000 inactive -1]]"},
		// A clock behind the delivery time shows idle 0, never negative.
		{10, "XPENDING s g - + 1", "[[1-1 c 0 2]]"},
	})
}

// TestGroupSignals checks which group commands wake blocked readers.
func TestGroupSignals(t *testing.T) {
	e := newTestEngine(2)
	run(e, 1, "XGROUP CREATE s g 0")
	e.TakeSignaled()
	for _, c := range []struct {
		cmd    string
		signal bool
	}{
		{"XREADGROUP GROUP g c STREAMS s >", false},
		{"XACK s g 1-1", false},
		{"XGROUP SETID s g 0", true},
		{"XGROUP CREATECONSUMER s g d", false},
		{"XGROUP DESTROY s nog", false},
		{"XGROUP DESTROY s g", true},
		{"XGROUP CREATE s g $ MKSTREAM", false},
		{"XGROUP CREATE t g $ MKSTREAM", true},
	} {
		run(e, 1, c.cmd)
		got := e.TakeSignaled()
		if (len(got) == 1 && got[0] == strings.Fields(c.cmd)[2]) != c.signal {
			t.Fatalf("%s: signaled %v, want signal=%v", c.cmd, got, c.signal)
		}
	}
}

// TestValidateGroupCommand checks that the stateless validators reject what
// Redis rejects before looking at keys, and nothing that depends on state.
func TestValidateGroupCommand(t *testing.T) {
	for _, c := range []struct {
		cmd string
		bad bool
	}{
		{"XREADGROUP GROUP g c STREAMS s >", false},
		{"XREADGROUP GROUP g c COUNT x STREAMS s >", true},
		{"XREADGROUP GROUP g c BLOCK -1 STREAMS s >", true},
		{"XREADGROUP STREAMS s >", true},
		{"XREADGROUP GROUP g c STREAMS s bad", false}, // NOGROUP comes first in Redis
		{"XGROUP CREATE s g $ ENTRIESREAD -3", true},
		{"XGROUP CREATE s g bad", false}, // key errors come first
		{"XGROUP NOPE", true},
		{"XACK s g bad", false}, // a missing key/group answers 0
		{"XPENDING s g IDLE 1 - +", true},
		{"XPENDING s g - + 10", false},
		{"XAUTOCLAIM s g c 0 0 COUNT 0", true},
		{"XCLAIM s g c x 1-1", false}, // NOGROUP comes first
		{"XINFO STREAM", true},
		{"XADD s * a 1", false},
	} {
		f := strings.Fields(c.cmd)
		argv := make([][]byte, len(f))
		for i, x := range f {
			argv[i] = []byte(x)
		}
		if err := Validate(1, argv); (err != nil) != c.bad {
			t.Errorf("%s: validator says %v, want bad=%v", c.cmd, err, c.bad)
		}
	}
}

// TestPELTree checks the chunked PEL against a sorted-map model under random
// inserts, deletes and seeks large enough to split and merge chunks.
func TestPELTree(t *testing.T) {
	seed := int64(20261202)
	rng := rand.New(rand.NewSource(seed))
	p := newPEL()
	var model []ID // sorted
	find := func(id ID) (int, bool) {
		i := sort.Search(len(model), func(i int) bool { return !model[i].Less(id) })
		return i, i < len(model) && model[i] == id
	}
	for op := 0; op < 30000; op++ {
		id := ID{uint64(rng.Intn(3000)), uint64(rng.Intn(3))}
		i, present := find(id)
		switch rng.Intn(4) {
		case 0, 1:
			if old := p.Insert(&NACK{ID: id}); (old != nil) != present {
				t.Fatalf("seed %d op %d insert %v: replaced=%v model=%v", seed, op, id, old != nil, present)
			}
			if !present {
				model = append(model, ID{})
				copy(model[i+1:], model[i:])
				model[i] = id
			}
		case 2:
			if _, ok := p.Delete(id); ok != present {
				t.Fatalf("seed %d op %d delete %v: %v model %v", seed, op, id, ok, present)
			}
			if present {
				model = append(model[:i], model[i+1:]...)
			}
		case 3:
			cu := p.Seek(id)
			for k := i; k < i+5 && k < len(model); k++ {
				nk, ok := cu.Next()
				if !ok || nk.ID != model[k] {
					t.Fatalf("seed %d op %d seek %v: got %v want %v", seed, op, id, nk, model[k])
				}
			}
		}
		if p.Len() != len(model) {
			t.Fatalf("seed %d op %d: len %d model %d", seed, op, p.Len(), len(model))
		}
	}
	// Full scan is sorted, complete, and chunks respect their bounds.
	var prev *NACK
	n := 0
	for _, c := range p.chunks {
		if len(c) == 0 || len(c) > pelChunkMax {
			t.Fatalf("chunk size %d", len(c))
		}
		for _, nk := range c {
			if prev != nil && !prev.ID.Less(nk.ID) {
				t.Fatalf("unsorted %v after %v", nk.ID, prev.ID)
			}
			prev = nk
			n++
		}
	}
	if n != len(model) {
		t.Fatalf("scan %d model %d", n, len(model))
	}
}

// TestGroupCodecRoundTrip encodes groups, decodes them into a fresh stream
// and checks the result re-encodes to the same bytes and the same XINFO.
func TestGroupCodecRoundTrip(t *testing.T) {
	e := newTestEngine(50)
	for _, c := range []string{
		"XGROUP CREATE s g1 0", "XGROUP CREATE s g0 $ ENTRIESREAD 50", "XGROUP CREATE s g2 10-1",
		"XREADGROUP GROUP g1 alice COUNT 20 STREAMS s >", "XREADGROUP GROUP g1 bob COUNT 5 STREAMS s >",
		"XACK s g1 3-1 4-1", "XCLAIM s g1 carol 0 7-1 RETRYCOUNT 9", "XGROUP CREATECONSUMER s g1 dave",
		"XREADGROUP GROUP g2 x NOACK STREAMS s >",
	} {
		if r := run(e, 12345, c); strings.HasPrefix(r, "-") {
			t.Fatalf("%s: %s", c, r)
		}
	}
	s := e.keys["s"].Stream
	enc := s.appendGroupsSnapshot([]byte("prefix"))
	enc = append(enc, "rest"...)
	s2 := NewStream()
	rest, err := s2.loadGroupsSnapshot(enc[len("prefix"):])
	if err != nil {
		t.Fatal(err)
	}
	if string(rest) != "rest" {
		t.Fatalf("rest %q", rest)
	}
	if again := s2.appendGroupsSnapshot([]byte("prefix")); !bytes.Equal(again, enc[:len(enc)-4]) {
		t.Fatalf("re-encoding differs")
	}
	e2 := New(DefaultConfig())
	e2.keys["s"] = &Value{Kind: KindStream, Stream: s}
	want := run(e2, 20000, "XINFO STREAM s FULL COUNT 0")
	// Same entries, restored groups.
	s.Groups = s2.Groups
	if got := run(e2, 20000, "XINFO STREAM s FULL COUNT 0"); got != want {
		t.Fatalf("restored groups differ:\n%s\n%s", got, want)
	}
	checkGroupInvariants(t, s, "codec")
	// Every truncation fails cleanly.
	body := enc[len("prefix") : len(enc)-4]
	for i := 0; i < len(body); i++ {
		if _, err := NewStream().loadGroupsSnapshot(body[:i]); err == nil {
			t.Fatalf("truncated at %d/%d decoded without error", i, len(body))
		}
	}
}
