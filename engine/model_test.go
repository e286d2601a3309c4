package engine

import (
	"bytes"
	"flag"
	"fmt"
	"math/rand"
	"slices"
	"strconv"
	"testing"
)

// A randomized model-based test: stream commands run through Exec against a
// deliberately simple reference (a sorted slice of entries), and the
// engine's storage invariants are checked after every operation.
//
// Replay a failure with: go test ./engine -run TestStreamModel -seed N

var (
	modelSeed  = flag.Int64("seed", 0, "run TestStreamModel with this seed only")
	modelSteps = flag.Int("modelsteps", 1500, "operations per TestStreamModel seed")
)

type modelEntry struct {
	id     ID
	fields []string
}

// streamModel is the reference: entries in ID order, plus metadata.
type streamModel struct {
	entries      []modelEntry
	lastID       ID
	maxDeleted   ID
	entriesAdded uint64
	exists       bool
}

func (m *streamModel) find(id ID) int {
	i, _ := slices.BinarySearchFunc(m.entries, id, func(e modelEntry, id ID) int { return e.id.Compare(id) })
	return i
}

// rangeOf returns the model's entries in [start, end], up to count (0 = all).
func (m *streamModel) rangeOf(start, end ID, count int, rev bool) []modelEntry {
	var out []modelEntry
	for _, e := range m.entries {
		if !e.id.Less(start) && !end.Less(e.id) {
			out = append(out, e)
		}
	}
	if rev {
		slices.Reverse(out)
	}
	if count > 0 && len(out) > count {
		out = out[:count]
	}
	return out
}

func entriesReply(es []modelEntry) Reply {
	out := Array{}
	for _, e := range es {
		fa := Array{}
		for _, f := range e.fields {
			fa = append(fa, BulkString(f))
		}
		out = append(out, Array{BulkString(e.id.String()), fa})
	}
	return out
}

// replyText renders a reply for comparison and messages.
func replyText(r Reply) string {
	var b bytes.Buffer
	var walk func(r Reply)
	walk = func(r Reply) {
		switch v := r.(type) {
		case Array:
			b.WriteString("[")
			for i, x := range v {
				if i > 0 {
					b.WriteString(" ")
				}
				walk(x)
			}
			b.WriteString("]")
		case PairMap:
			walk(Array(v))
		case Map:
			walk(Array(v))
		case *EntryReply:
			walk(v.Array())
		case BulkString:
			fmt.Fprintf(&b, "%q", []byte(v))
		case *Error:
			b.WriteString("ERR(" + v.Msg + ")")
		default:
			fmt.Fprintf(&b, "%v", v)
		}
	}
	walk(r)
	return b.String()
}

// modelRun drives one engine and one model from rnd for steps operations.
type modelRun struct {
	t    testing.TB
	e    *Engine
	m    map[string]*streamModel
	rnd  *rand.Rand
	desc string
}

var modelKeys = []string{"s1", "s2"}
var modelFieldSets = [][]string{{"a"}, {"a", "b"}, {"customer", "amount", "sku"}, {"b", "a"}}

func newModelRun(t testing.TB, rnd *rand.Rand) *modelRun {
	cfgs := []Config{DefaultConfig(), {NodeMaxBytes: 0, NodeMaxEntries: 3}, {NodeMaxBytes: 60, NodeMaxEntries: 0},
		{NodeMaxBytes: 120, NodeMaxEntries: 5}, {NodeMaxBytes: 1, NodeMaxEntries: 100}, {NodeMaxEntries: 200}}
	cfg := cfgs[rnd.Intn(len(cfgs))]
	r := &modelRun{t: t, e: New(cfg), m: map[string]*streamModel{}, rnd: rnd}
	for _, k := range modelKeys {
		r.m[k] = &streamModel{}
	}
	return r
}

func (r *modelRun) exec(args ...string) Reply {
	argv := make([][]byte, len(args))
	for i, a := range args {
		argv[i] = []byte(a)
	}
	r.desc = fmt.Sprint(args)
	return r.e.Exec(1, argv)
}

func (r *modelRun) expect(got Reply, want Reply) {
	r.t.Helper()
	if g, w := replyText(got), replyText(want); g != w {
		r.t.Fatalf("%s:\n got  %s\n want %s", r.desc, g, w)
	}
}

func (r *modelRun) randomValue() string {
	switch r.rnd.Intn(4) {
	case 0:
		return strconv.Itoa(r.rnd.Intn(200000) - 100000)
	case 1:
		return string(bytes.Repeat([]byte{'x'}, r.rnd.Intn(80)))
	default:
		return fmt.Sprintf("v%d", r.rnd.Intn(1000))
	}
}

// randomID picks an ID near the stream's top, sometimes below it.
func (r *modelRun) randomID(m *streamModel) ID {
	base := m.lastID
	switch r.rnd.Intn(10) {
	case 0:
		if len(m.entries) > 0 {
			return m.entries[r.rnd.Intn(len(m.entries))].id
		}
	case 1:
		return ID{base.Ms, base.Seq + uint64(r.rnd.Intn(3))}
	}
	return ID{base.Ms + uint64(r.rnd.Intn(3)), uint64(r.rnd.Intn(4))}
}

func (r *modelRun) step() {
	key := modelKeys[r.rnd.Intn(len(modelKeys))]
	m := r.m[key]
	switch op := r.rnd.Intn(20); {
	case op < 9: // XADD, maybe with exact trimming
		id := r.randomID(m)
		names := modelFieldSets[r.rnd.Intn(len(modelFieldSets))]
		args := []string{"XADD", key}
		trim := r.rnd.Intn(6)
		maxlen := r.rnd.Intn(30)
		if trim == 0 {
			args = append(args, "MAXLEN", strconv.Itoa(maxlen))
		}
		args = append(args, id.String())
		var fields []string
		for _, n := range names {
			fields = append(fields, n, r.randomValue())
		}
		args = append(args, fields...)
		got := r.exec(args...)
		if !m.lastID.Less(id) {
			if id.IsZero() {
				r.expect(got, ErrXAddIDZero)
			} else {
				r.expect(got, ErrXAddIDTooSmall)
			}
			return
		}
		r.expect(got, BulkString(id.String()))
		m.entries = append(m.entries, modelEntry{id, fields})
		m.lastID, m.exists = id, true
		m.entriesAdded++
		if trim == 0 && len(m.entries) > maxlen {
			m.entries = slices.Clone(m.entries[len(m.entries)-maxlen:])
		}
	case op < 12: // XDEL
		var ids []string
		want := 0
		seen := map[ID]bool{}
		for n := 1 + r.rnd.Intn(3); n > 0; n-- {
			id := r.randomID(m)
			ids = append(ids, id.String())
			if i := m.find(id); i < len(m.entries) && m.entries[i].id == id && !seen[id] {
				want++
			}
			seen[id] = true
		}
		r.expect(r.exec(append([]string{"XDEL", key}, ids...)...), Integer(want))
		for id := range seen {
			if i := m.find(id); i < len(m.entries) && m.entries[i].id == id {
				m.entries = slices.Delete(m.entries, i, i+1)
				if m.maxDeleted.Less(id) {
					m.maxDeleted = id
				}
			}
		}
	case op < 14: // XTRIM exact
		var got Reply
		var keep []modelEntry
		if r.rnd.Intn(2) == 0 {
			n := r.rnd.Intn(40)
			got = r.exec("XTRIM", key, "MAXLEN", strconv.Itoa(n))
			keep = m.entries
			if len(keep) > n {
				keep = keep[len(keep)-n:]
			}
		} else {
			id := r.randomID(m)
			got = r.exec("XTRIM", key, "MINID", id.String())
			i := m.find(id)
			keep = m.entries[i:]
		}
		r.expect(got, Integer(len(m.entries)-len(keep)))
		m.entries = slices.Clone(keep)
	case op < 16: // XTRIM approximate: whole nodes only, a prefix of the model
		var got Reply
		if r.rnd.Intn(2) == 0 {
			got = r.exec("XTRIM", key, "MAXLEN", "~", strconv.Itoa(r.rnd.Intn(40)))
		} else {
			got = r.exec("XTRIM", key, "MINID", "~", r.randomID(m).String())
		}
		n, ok := got.(Integer)
		if !ok || int(n) > len(m.entries) || n < 0 {
			r.t.Fatalf("%s: bad reply %s", r.desc, replyText(got))
		}
		m.entries = slices.Clone(m.entries[n:])
	case op < 19: // XRANGE / XREVRANGE
		a, b := r.randomID(m), r.randomID(m)
		if b.Less(a) {
			a, b = b, a
		}
		count := r.rnd.Intn(5)
		rev := r.rnd.Intn(2) == 0
		args := []string{"XRANGE", key, a.String(), b.String()}
		if rev {
			args = []string{"XREVRANGE", key, b.String(), a.String()}
		}
		if count > 0 {
			args = append(args, "COUNT", strconv.Itoa(count))
		}
		r.expect(r.exec(args...), entriesReply(m.rangeOf(a, b, count, rev)))
	case op < 20 && r.rnd.Intn(3) == 0: // XREAD after a random ID
		id := r.randomID(m)
		count := r.rnd.Intn(4)
		start, _ := id.Incr()
		es := m.rangeOf(start, MaxID, count, false)
		var want Reply = NullArray{}
		if len(es) > 0 {
			want = PairMap{BulkString(key), entriesReply(es)}
		}
		r.expect(r.exec("XREAD", "COUNT", strconv.Itoa(count), "STREAMS", key, id.String()), want)
	case op < 20 && r.rnd.Intn(2) == 0: // XADD * (now is 1, so the ID follows the top)
		v := r.randomValue()
		got := r.exec("XADD", key, "*", "a", v)
		id, _ := m.lastID.Incr()
		if m.lastID.Ms < 1 {
			id = ID{1, 0}
		}
		r.expect(got, BulkString(id.String()))
		m.entries = append(m.entries, modelEntry{id, []string{"a", v}})
		m.lastID, m.exists = id, true
		m.entriesAdded++
	default: // XLEN
		r.expect(r.exec("XLEN", key), Integer(len(m.entries)))
	}
	r.check(key)
}

// check verifies the storage invariants of key and compares it to the model.
func (r *modelRun) check(key string) {
	r.t.Helper()
	m := r.m[key]
	v, ok := r.e.keys[key]
	if !ok {
		if m.exists {
			r.t.Fatalf("after %s: key %s vanished", r.desc, key)
		}
		return
	}
	s := v.Stream
	if s.Length != uint64(len(m.entries)) || s.LastID != m.lastID || s.EntriesAdded != m.entriesAdded ||
		s.MaxDeletedID != m.maxDeleted {
		r.t.Fatalf("after %s: metadata len=%d last=%v added=%d maxdel=%v; model len=%d last=%v added=%d maxdel=%v",
			r.desc, s.Length, s.LastID, s.EntriesAdded, s.MaxDeletedID, len(m.entries), m.lastID, m.entriesAdded, m.maxDeleted)
	}
	wantFirst := ID{}
	if len(m.entries) > 0 {
		wantFirst = m.entries[0].id
	}
	if s.FirstID != wantFirst {
		r.t.Fatalf("after %s: first-id %v, model %v", r.desc, s.FirstID, wantFirst)
	}
	var live uint64
	cfg := r.e.cfg
	for i := range s.rax.nodes {
		n := &s.rax.nodes[i]
		c, err := checkNode(n)
		if err != nil {
			r.t.Fatalf("after %s: node %d: %v", r.desc, i, err)
		}
		live += uint64(c)
		l, d := n.counts()
		if cfg.NodeMaxEntries > 0 && l+d > int64(cfg.NodeMaxEntries) {
			r.t.Fatalf("after %s: node %d holds %d entries > %d", r.desc, i, l+d, cfg.NodeMaxEntries)
		}
		if l == 0 && i != 0 {
			r.t.Fatalf("after %s: empty node %d", r.desc, i)
		}
		if i > 0 && !s.rax.nodes[i-1].last.Less(n.master) {
			r.t.Fatalf("after %s: nodes out of order at %d", r.desc, i)
		}
	}
	if live != s.Length {
		r.t.Fatalf("after %s: nodes hold %d live entries, length %d", r.desc, live, s.Length)
	}
	if got, want := replyText(s.rangeReply(MinID, MaxID, 0, false)), replyText(entriesReply(m.entries)); got != want {
		r.t.Fatalf("after %s: contents\n got  %s\n want %s", r.desc, got, want)
	}
}

func TestStreamModel(t *testing.T) {
	seeds := []int64{1, 2, 3, 4, 5, 6, 7, 8}
	if *modelSeed != 0 {
		seeds = []int64{*modelSeed}
	}
	for _, seed := range seeds {
		t.Run(strconv.FormatInt(seed, 10), func(t *testing.T) {
			t.Logf("seed %d (replay: go test ./engine -run TestStreamModel -seed %d)", seed, seed)
			r := newModelRun(t, rand.New(rand.NewSource(seed)))
			for i := 0; i < *modelSteps; i++ {
				r.step()
			}
		})
	}
}

// FuzzStreamOps drives the same model from fuzzer-chosen bytes.
func FuzzStreamOps(f *testing.F) {
	f.Add(int64(1), []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add(int64(42), bytes.Repeat([]byte{3, 200, 17}, 50))
	f.Fuzz(func(t *testing.T, seed int64, ops []byte) {
		if len(ops) > 300 {
			ops = ops[:300] // keep each input fast: check() is O(stream length)
		}
		r := newModelRun(t, rand.New(rand.NewSource(seed)))
		for _, b := range ops {
			// Each byte skips some draws, steering the operation mix.
			for k := 0; k < int(b%13); k++ {
				r.rnd.Int63()
			}
			r.step()
		}
	})
}
