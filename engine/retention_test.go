package engine

import (
	"fmt"
	"math/rand"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestRetentionTableCommands(t *testing.T) {
	e := New(DefaultConfig())
	for _, c := range []struct {
		cmd  []string
		want string
	}{
		{[]string{RetentionCommand, "LIST"}, "[]"},
		{[]string{RetentionCommand, "GET", "orders:*"}, "{}"},
		{[]string{RetentionCommand, "DEL", "orders:*"}, "0"},
		{[]string{RetentionCommand, "SET", "orders:*", "MAXAGE", "10000"}, "OK"},
		{[]string{RetentionCommand, "GET", "orders:*"}, `["pattern" "orders:*" "maxlen" {} "maxage" 10000 "maxbytes" {} "mode" "keepref"]`},
		{[]string{RetentionCommand, "SET", "orders:*", "maxlen", "5", "MAXBYTES", "64kb", "acked"}, "OK"},
		{[]string{RetentionCommand, "SET", "audit", "MAXLEN", "0", "DELREF"}, "OK"},
		{[]string{RetentionCommand, "LIST"}, `[["pattern" "audit" "maxlen" 0 "maxage" {} "maxbytes" {} "mode" "delref"] ["pattern" "orders:*" "maxlen" 5 "maxage" {} "maxbytes" 65536 "mode" "acked"]]`},
		{[]string{RetentionCommand, "DEL", "audit"}, "1"},
		{[]string{RetentionCommand, "DEL", "audit"}, "0"},
		{[]string{RetentionCommand, "SET", "x"}, "ERR(ERR wrong number of arguments for 'raftstream|retention|set' command)"},
		{[]string{RetentionCommand, "SET", "x", "ACKED"}, "ERR(ERR RETENTION SET needs at least one of MAXLEN, MAXAGE and MAXBYTES)"},
		{[]string{RetentionCommand, "SET", "x", "MAXLEN"}, "ERR(ERR syntax error)"},
		{[]string{RetentionCommand, "SET", "x", "MAXLEN", "1", "MAXLEN", "2"}, "ERR(ERR syntax error)"},
		{[]string{RetentionCommand, "SET", "x", "MAXLEN", "1", "ACKED", "KEEPREF"}, "ERR(ERR syntax error)"},
		{[]string{RetentionCommand, "SET", "x", "MAXLEN", "-1"}, "ERR(ERR MAXLEN must be >= 0)"},
		{[]string{RetentionCommand, "SET", "x", "MAXAGE", "abc"}, "ERR(ERR value is not an integer or out of range)"},
		{[]string{RetentionCommand, "SET", "x", "MAXBYTES", "-5"}, "ERR(ERR MAXBYTES must be a memory value (bytes, or with a unit: 64kb, 100mb))"},
		{[]string{RetentionCommand, "SET", "", "MAXLEN", "1"}, "ERR(ERR the retention pattern must not be empty)"},
		{[]string{RetentionCommand, "SET", "x", "FOO", "1"}, "ERR(ERR syntax error)"},
		{[]string{RetentionCommand, "GET"}, "ERR(ERR wrong number of arguments for 'raftstream|retention|get' command)"},
		{[]string{RetentionCommand, "LIST", "x"}, "ERR(ERR wrong number of arguments for 'raftstream|retention|list' command)"},
		{[]string{RetentionCommand, "FOO"}, "ERR(ERR unknown subcommand 'FOO'. Try SET, GET, DEL or LIST.)"},
	} {
		if got := replyText(execS(e, 1, c.cmd...)); got != c.want {
			t.Errorf("%q = %s, want %s", c.cmd, got, c.want)
		}
		if err := Validate(1, toArgv(c.cmd)); (err != nil) != strings.HasPrefix(c.want, "ERR(") {
			t.Errorf("Validate %q = %v", c.cmd, err)
		}
	}
}

// TestRetentionPolicyChoiceAndXInfo: the policy whose pattern is the name
// wins, else the longest pattern; XINFO STREAM (and FULL) ends with it, and
// says nothing for streams no policy governs.
func TestRetentionPolicyChoiceAndXInfo(t *testing.T) {
	e := New(DefaultConfig())
	for _, k := range []string{"orders:eu", "orders:eu:1", "other"} {
		execS(e, 1, "XADD", k, "1-1", "f", "v")
	}
	execS(e, 1, RetentionCommand, "SET", "*", "MAXLEN", "1")
	execS(e, 1, RetentionCommand, "SET", "orders:*", "MAXLEN", "2")
	execS(e, 1, RetentionCommand, "SET", "orders:eu*", "MAXLEN", "3")
	execS(e, 1, RetentionCommand, "SET", "orders:eu", "MAXLEN", "4")
	for k, want := range map[string]int64{"orders:eu": 4, "orders:eu:1": 3, "other": 1, "orders:us": 2} {
		if p := e.ret.match(k); p == nil || p.MaxLen != want {
			t.Errorf("policy of %s: %+v, want MAXLEN %d", k, p, want)
		}
	}
	for _, full := range []bool{false, true} {
		cmd := []string{"XINFO", "STREAM", "orders:eu:1"}
		if full {
			cmd = append(cmd, "FULL")
		}
		r := execS(e, 1, cmd...).(Map)
		if got := replyText(Array(r[len(r)-2:])); got != `["retention-policy" ["pattern" "orders:eu*" "maxlen" 3 "maxage" {} "maxbytes" {} "mode" "keepref"]]` {
			t.Errorf("%v ends with %s", cmd, got)
		}
	}
	execS(e, 1, RetentionCommand, "DEL", "*")
	if r := execS(e, 1, "XINFO", "STREAM", "other").(Map); string(r[len(r)-2].(BulkString)) != "last-entry" {
		t.Errorf("a stream without a policy shows %s", replyText(r[len(r)-2]))
	}
}

// checkRetentionTracking holds e.ret.keys to its invariant.
func checkRetentionTracking(t *testing.T, e *Engine) {
	t.Helper()
	var want []string
	for k, v := range e.keys {
		if v.Kind == KindStream && e.ret.match(k) != nil {
			want = append(want, k)
		}
	}
	got := slices.Clone(e.ret.keys)
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("tracked %q, want %q", got, want)
	}
	for i, k := range e.ret.keys {
		if e.ret.pos[k] != i {
			t.Fatalf("pos[%s] = %d, want %d", k, e.ret.pos[k], i)
		}
	}
	if len(e.ret.pos) != len(e.ret.keys) {
		t.Fatalf("pos has %d keys, keys %d", len(e.ret.pos), len(e.ret.keys))
	}
}

func TestRetentionTracksGovernedStreams(t *testing.T) {
	rnd := rand.New(rand.NewSource(3))
	e := New(DefaultConfig())
	keys := []string{"a:1", "a:2", "b:1", "b:2", "c"}
	for i := 0; i < 3000; i++ {
		k, k2 := keys[rnd.Intn(len(keys))], keys[rnd.Intn(len(keys))]
		now := int64(1000 + i)
		switch rnd.Intn(9) {
		case 0, 1:
			execS(e, now, "XADD", k, "*", "f", "v")
		case 2:
			execS(e, now, "SET", k, "v")
		case 3:
			execS(e, now, "DEL", k)
		case 4:
			execS(e, now, "RENAME", k, k2)
		case 5:
			execS(e, now, RetentionCommand, "SET", []string{"a:*", "b:1", "*", "c"}[rnd.Intn(4)], "MAXLEN", "3")
		case 6:
			execS(e, now, RetentionCommand, "DEL", []string{"a:*", "b:1", "*", "c"}[rnd.Intn(4)])
		case 7:
			execS(e, now, "XGROUP", "CREATE", k, "g", "$", "MKSTREAM")
		case 8:
			if rnd.Intn(10) == 0 {
				execS(e, now, "FLUSHALL")
			} else {
				b := new(strings.Builder)
				if _, err := e.Snapshot().WriteTo(b); err != nil {
					t.Fatal(err)
				}
				e2, err := Restore(strings.NewReader(b.String()))
				if err != nil {
					t.Fatal(err)
				}
				checkRetentionTracking(t, e2)
			}
		}
		checkRetentionTracking(t, e)
	}
}

// TestRetentionTrims: MAXAGE, MAXLEN and MAXBYTES trim whole nodes, through
// XTRIM's machinery (counters as XTRIM leaves them); the cycle proposes only
// streams with something to trim, and a stream just trimmed is not due.
func TestRetentionTrims(t *testing.T) {
	e := New(Config{NodeMaxEntries: 10})
	for i := 1; i <= 100; i++ { // entry i at time i*100 ms
		execS(e, 0, "XADD", "age", strconv.Itoa(i*100)+"-0", "f", "v")
		execS(e, 0, "XADD", "len", strconv.Itoa(i)+"-0", "f", "v")
		execS(e, 0, "XADD", "bytes", strconv.Itoa(i)+"-0", "f", "v")
		execS(e, 0, "XADD", "free", strconv.Itoa(i)+"-0", "f", "v")
	}
	execS(e, 0, RetentionCommand, "SET", "age", "MAXAGE", "2500")
	execS(e, 0, RetentionCommand, "SET", "len", "MAXLEN", "35")
	lp := len(e.keys["bytes"].Stream.rax.nodes[0].lp)
	execS(e, 0, RetentionCommand, "SET", "bytes", "MAXBYTES", strconv.Itoa(3*lp+lp/2))
	now := int64(10_000)
	argv, _ := e.RetentionCycle(now, 0, 100, 100)
	if got := string(joinArgv(argv)); got != "raftstream.retain age bytes len" { // tracked in key order
		t.Fatalf("cycle proposes %q", got)
	}
	if r := e.Exec(now, argv); r != Integer(70+60+70) {
		t.Fatalf("trimmed %v", r)
	}
	for _, c := range []struct {
		key, first string
		length     int
	}{
		// Entries older than 10000-2500 = 7500 ms (75 of them) go by whole
		// nodes of 10: the node 71..80 stays, as with MINID ~.
		{"age", "7100-0", 30},
		{"len", "61-0", 40}, // ~35: whole nodes
		{"bytes", "71-0", 30},
		{"free", "1-0", 100},
	} {
		s := e.keys[c.key].Stream
		if s.Length != uint64(c.length) || s.FirstID.String() != c.first || s.EntriesAdded != 100 || !s.MaxDeletedID.IsZero() {
			t.Errorf("%s: length %d first %v entries-added %d max-deleted %v", c.key, s.Length, s.FirstID, s.EntriesAdded, s.MaxDeletedID)
		}
	}
	if argv, _ := e.RetentionCycle(now, 0, 100, 100); argv != nil {
		t.Fatalf("nothing left to trim, yet the cycle proposes %q", joinArgv(argv))
	}
	// Time passes: age is due again, the others are not.
	if argv, _ := e.RetentionCycle(now+1000, 0, 100, 100); string(joinArgv(argv)) != "raftstream.retain age" {
		t.Fatalf("a second later: %q", joinArgv(argv))
	}
	// visit and max bound the work; the cursor goes round. Tracked now:
	// age, bytes, free, len; due: age (its own policy), free ("*").
	execS(e, now, RetentionCommand, "SET", "*", "MAXLEN", "0")
	argv, next := e.RetentionCycle(now+1000, 0, 2, 100)
	if string(joinArgv(argv)) != "raftstream.retain age" || next != 2 {
		t.Fatalf("visit 2: %q next %d", joinArgv(argv), next)
	}
	if argv, next = e.RetentionCycle(now+1000, next, 100, 1); string(joinArgv(argv)) != "raftstream.retain free" || next != 3 {
		t.Fatalf("max 1: %q next %d", joinArgv(argv), next)
	}
}

func joinArgv(argv [][]byte) []byte {
	var out []byte
	for i, a := range argv {
		if i > 0 {
			out = append(out, ' ')
		}
		out = append(out, a...)
	}
	return out
}

// TestRetentionAckedModel runs random XADD, XREADGROUP, XACK, XCLAIM,
// XGROUP CREATE/DESTROY and retention cycles under an ACKED policy (MAXLEN
// or MAXAGE) against a reference model of what each group still needs, and
// checks after every round of cycles that retention removed only a prefix of the
// stream, only entries every group had acknowledged, that the counters
// (length, first entry, entries-added) are XTRIM's, and that once nothing
// is needed the stream is within the limit. RETENTION_MODEL_SEED replays a
// seed.
func TestRetentionAckedModel(t *testing.T) {
	seed := replaySeed(t, "RETENTION_MODEL_SEED")
	trimmed := 0
	for round := 0; round < 6; round++ {
		trimmed += runRetentionModel(t, seed+int64(round), 1500)
	}
	if trimmed == 0 {
		t.Fatal("retention never trimmed anything")
	}
	t.Logf("retention trimmed %d entries", trimmed)
}

func runRetentionModel(t *testing.T, seed int64, ops int) (trimmed int) {
	rng := rand.New(rand.NewSource(seed))
	nodeMax := 1 + rng.Intn(6)
	e := New(Config{NodeMaxEntries: nodeMax})
	const key = "orders:1"
	byAge := rng.Intn(2) == 0
	limit := 5 + rng.Intn(20)
	if byAge {
		execS(e, 0, RetentionCommand, "SET", "orders:*", "MAXAGE", strconv.Itoa(limit*10), "ACKED")
	} else {
		execS(e, 0, RetentionCommand, "SET", "orders:*", "MAXLEN", strconv.Itoa(limit), "ACKED")
	}
	type group struct {
		last ID
		pel  map[ID]bool
	}
	groups := map[string]*group{}
	var entries []ID // the model: live entries in order
	added := 0
	now := int64(1000)
	fail := func(op int, format string, args ...any) {
		t.Fatalf("seed %d op %d: %s", seed, op, fmt.Sprintf(format, args...))
	}
	needed := func(id ID) bool {
		for _, g := range groups {
			if g.last.Less(id) || g.pel[id] {
				return true
			}
		}
		return false
	}
	xrange := func() []ID {
		var ids []ID
		for _, r := range execS(e, now, "XRANGE", key, "-", "+").(Array) {
			ids = append(ids, r.(Array)[0].(BulkString).ID())
		}
		return ids
	}
	names := []string{"g1", "g2", "g3"}
	for op := 0; op < ops; op++ {
		now += int64(rng.Intn(8))
		g := names[rng.Intn(len(names))]
		switch k := rng.Intn(20); {
		case k < 7:
			r := execS(e, now, "XADD", key, "*", "f", strconv.Itoa(op))
			entries = append(entries, r.(BulkString).ID())
			added++
		case k < 10:
			if groups[g] == nil {
				continue
			}
			r := execS(e, now, "XREADGROUP", "GROUP", g, "c", "COUNT", strconv.Itoa(1+rng.Intn(4)), "STREAMS", key, ">")
			if arr, ok := r.(Array); ok {
				for _, ent := range arr[0].(Array)[1].(Array) {
					id := ent.(*EntryReply).ID
					groups[g].pel[id], groups[g].last = true, id
				}
			}
		case k < 14:
			if groups[g] == nil || len(groups[g].pel) == 0 {
				continue
			}
			var ids []ID
			for id := range groups[g].pel {
				ids = append(ids, id)
			}
			slices.SortFunc(ids, func(a, b ID) int { return a.Compare(b) })
			id := ids[rng.Intn(len(ids))]
			if rng.Intn(3) == 0 {
				id = ids[0] // the oldest: lets retention move on
			}
			execS(e, now, "XACK", key, g, id.String())
			delete(groups[g].pel, id)
		case k < 15:
			if groups[g] != nil {
				execS(e, now, "XGROUP", "DESTROY", key, g)
				delete(groups, g)
				continue
			}
			start := "$"
			if rng.Intn(2) == 0 && len(entries) > 0 {
				start = entries[rng.Intn(len(entries))].String()
			}
			execS(e, now, "XGROUP", "CREATE", key, g, start, "MKSTREAM")
			gr := &group{pel: map[ID]bool{}}
			if start == "$" {
				gr.last = execS(e, now, "XINFO", "STREAM", key).(Map)[7].(BulkString).ID()
			} else {
				gr.last = BulkString(start).ID()
			}
			groups[g] = gr
		default:
			if e.keys[key] == nil {
				continue
			}
			before := xrange()
			if !slices.Equal(before, entries) {
				fail(op, "stream %v, model %v", before, entries)
			}
			// A cycle's trim is bounded like XTRIM ~ (LIMIT: 100 × the node
			// size), so a backlog a group held back takes several cycles;
			// each cycle found due must remove something, and a few cycles
			// must drain it.
			for pass := 0; ; pass++ {
				argv, _ := e.RetentionCycle(now, 0, 10, 10)
				if argv == nil {
					break
				}
				if pass == 20 {
					fail(op, "still due after %d cycles: %q", pass, joinArgv(argv))
				}
				if n, _ := e.Exec(now, argv).(Integer); n <= 0 {
					fail(op, "a cycle found %q due and removed nothing", joinArgv(argv))
				}
			}
			after := xrange()
			if len(after) > len(before) || !slices.Equal(after, before[len(before)-len(after):]) {
				fail(op, "retention removed more than a prefix: %v -> %v", before, after)
			}
			for _, id := range before[:len(before)-len(after)] {
				if needed(id) {
					fail(op, "retention removed %v, which a group still needs", id)
				}
				trimmed++
			}
			entries = after
			info := execS(e, now, "XINFO", "STREAM", key).(Map)
			first := ID{}
			if len(after) > 0 {
				first = after[0]
			}
			if info[1] != Integer(len(after)) || info[11] != Integer(added) || info[13].(BulkString).ID() != first {
				fail(op, "XINFO %s, model length %d first %v entries-added %d", replyText(info), len(after), first, added)
			}
			// With nothing needed, the limit holds within a node.
			if len(after) > 0 && !needed(after[0]) {
				if byAge && int64(after[0].Ms) < now-int64(limit*10) && len(after) > nodeMax &&
					int64(e.keys[key].Stream.rax.nodes[0].last.Ms) < now-int64(limit*10) {
					fail(op, "a whole node older than MAXAGE stays: %v", after[:nodeMax+1])
				}
				if !byAge && len(after) > limit+nodeMax {
					fail(op, "length %d, MAXLEN %d, nodes of %d", len(after), limit, nodeMax)
				}
			}
		}
	}
	return trimmed
}

// ID parses a bulk ID reply (tests).
func (b BulkString) ID() ID {
	id, _ := ParseID(b, 0)
	return id
}
