package fsm

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/raftstream/raftstream/engine"
)

func newTestMachine() *machine {
	return newMachine(0, engine.DefaultConfig(), nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
}

// TestApplyPanicsOnCorruptEntry: a replica stops rather than skip an entry.
func TestApplyPanicsOnCorruptEntry(t *testing.T) {
	m := newTestMachine()
	good := EncodeBatch(nil, &Batch{TS: 1, Units: []Unit{unit(cmd("XADD", "s", "1-1", "f", "v"))}})
	bad := bytes.Clone(good)
	bad[len(bad)-1] ^= 0xff
	defer func() {
		r := recover()
		if r == nil || !strings.Contains(r.(string), "log entry 8") {
			t.Fatalf("recovered %v, want a panic naming entry 8", r)
		}
		// Nothing after the bad entry applied, and the lock was released.
		m.view(func(e *engine.Engine) {
			if got := e.Exec(0, cmd("XLEN", "s")); got != engine.Integer(1) {
				t.Fatalf("XLEN %v, want 1", got)
			}
		})
	}()
	m.ApplyBatch([]*raft.Log{
		{Index: 7, Type: raft.LogCommand, Data: good},
		{Index: 8, Type: raft.LogCommand, Data: bad},
		{Index: 9, Type: raft.LogCommand, Data: good},
	})
}

// TestApplyBatchResults: one result per log; non-command entries get nil;
// the apply time never goes backwards across entries.
func TestApplyBatchResults(t *testing.T) {
	m := newTestMachine()
	enc := func(ts int64, units ...Unit) []byte { return EncodeBatch(nil, &Batch{TS: ts, Units: units}) }
	out := m.ApplyBatch([]*raft.Log{
		{Type: raft.LogCommand, Data: enc(50, unit(cmd("XADD", "s", "*", "f", "v")))},
		{Type: raft.LogConfiguration, Data: []byte("not ours")},
		{Type: raft.LogCommand, Data: enc(10, unit(cmd("XADD", "s", "*", "f", "v"), cmd("XLEN", "s")))},
		{Type: raft.LogCommand, Data: enc(60)}, // fence
	})
	if len(out) != 4 || out[1] != nil {
		t.Fatalf("results %v", out)
	}
	r0, r2 := out[0].([][]engine.Reply), out[2].([][]engine.Reply)
	if string(r0[0][0].(engine.BulkString)) != "50-0" || string(r2[0][0].(engine.BulkString)) != "50-1" || r2[0][1] != engine.Integer(2) {
		t.Fatalf("replies %v %v", r0, r2)
	}
	if f, ok := out[3].([][]engine.Reply); !ok || f != nil {
		t.Fatalf("fence result %#v", out[3])
	}
	if m.lastNow != 60 {
		t.Fatalf("lastNow %d, want 60", m.lastNow)
	}
}

// TestRestoreRejectsGarbage: a bad snapshot fails Restore and keeps state.
func TestRestoreRejectsGarbage(t *testing.T) {
	m := newTestMachine()
	m.ApplyBatch([]*raft.Log{{Type: raft.LogCommand, Data: EncodeBatch(nil, &Batch{TS: 5, Units: []Unit{unit(cmd("XADD", "s", "*", "f", "v"))}})}})
	whole := snapshotBytes(t, m)
	for name, data := range map[string][]byte{
		"empty":     nil,
		"magic":     append([]byte("xxxxx"), whole[5:]...),
		"version":   append(append([]byte("rsfsm"), 9), whole[6:]...),
		"truncated": whole[:len(whole)-3],
		"header":    whole[:8],
	} {
		if err := m.Restore(io.NopCloser(bytes.NewReader(data))); err == nil {
			t.Errorf("%s: Restore accepted a bad snapshot", name)
		}
	}
	m.view(func(e *engine.Engine) {
		if got := e.Exec(0, cmd("XLEN", "s")); got != engine.Integer(1) {
			t.Fatalf("state lost after failed restores: XLEN %v", got)
		}
	})
	// And the good one restores into a fresh machine.
	m2 := newTestMachine()
	if err := m2.Restore(io.NopCloser(bytes.NewReader(whole))); err != nil {
		t.Fatal(err)
	}
	if m2.lastNow != 5 {
		t.Fatalf("lastNow %d, want 5", m2.lastNow)
	}
}

// TestApplyAnswersTheLeadersProposals: a unit the leader proposed is
// answered where its entry applies, even while the entry's waiter (which
// reads raft's future) is held back; the waiter, once released, leaves it
// answered as it was.
func TestApplyAnswersTheLeadersProposals(t *testing.T) {
	release := make(chan struct{})
	waiterHook = func() { <-release }
	t.Cleanup(func() { waiterHook = nil })
	r := singleVoter(t, nil)
	f := r.Submit(unit(cmd("XADD", "s", "1-1", "f", "v")))
	select {
	case <-f.Done():
	case <-time.After(10 * time.Second):
		close(release)
		t.Fatal("the unit was not answered while its waiter was held back")
	}
	replies, err := f.Wait(context.Background())
	close(release)
	if err != nil || len(replies) != 1 || f.Index() == 0 {
		t.Fatalf("replies %v, err %v, index %d", replies, err, f.Index())
	}
	if got := apply(t, r.Shard, unit(cmd("XLEN", "s"))); got[0] != engine.Integer(1) {
		t.Fatalf("XLEN = %#v", got[0])
	}
}

// TestLeaderAppliesItsProposalsWithoutDecoding: entries the leader
// proposed are applied from the batches they were encoded from (nothing
// decoded, nothing left remembered afterwards); a replica that reopens
// replays the same entries from its log by decoding them, to the same
// state.
func TestLeaderAppliesItsProposalsWithoutDecoding(t *testing.T) {
	dir := t.TempDir()
	r := openReplica(t, dir, "n1", "127.0.0.1:0", nil)
	if err := r.BootstrapIfEmpty([]raft.Server{r.server()}); err != nil {
		t.Fatal(err)
	}
	waitLeader(t, r)
	decodedBefore := r.m.decoded.Load() // the bootstrap configuration entry is not a command
	const n = 50
	for i := range n {
		rs := apply(t, r.Shard, unit(cmd("XADD", "s", fmt.Sprintf("%d-1", i+1), "f", strconv.Itoa(i)), cmd("XLEN", "s")))
		if got := rs[1]; got != engine.Integer(i+1) {
			t.Fatalf("XLEN after %d XADDs = %#v", i+1, got)
		}
	}
	if d := r.m.decoded.Load() - decodedBefore; d != 0 {
		t.Fatalf("the leader decoded %d of its own entries, want 0", d)
	}
	// The proposer's waiter forgets an entry right after answering it, so
	// the last one may still be remembered for a moment after apply returns.
	waitFor(t, 5*time.Second, "answered proposals forgotten", func() bool {
		left := 0
		r.m.proposed.Range(func(any, any) bool { left++; return true })
		return left == 0
	})
	r.close(t)

	r2 := openReplica(t, dir, "n1", "127.0.0.1:0", nil)
	waitLeader(t, r2)
	waitFor(t, 10*time.Second, "the log replayed", func() bool {
		var l int64
		r2.StaleRead(func(e *engine.Engine) {
			if v, ok := e.Exec(0, cmd("XLEN", "s")).(engine.Integer); ok {
				l = int64(v)
			}
		})
		return l == n
	})
	if r2.m.decoded.Load() < n {
		t.Fatalf("replay decoded %d entries, want at least %d", r2.m.decoded.Load(), n)
	}
	var last engine.Reply
	r2.StaleRead(func(e *engine.Engine) { last = e.Exec(0, cmd("XRANGE", "s", "-", "+", "COUNT", "1")) })
	if got := fmt.Sprintf("%s", last); !strings.Contains(got, "1-1") || !strings.Contains(got, "f 0") {
		t.Fatalf("first entry after replay: %s", got)
	}
}

// TestEngineKeepsNoArgument: a follower's decoded arguments are slices of
// the log entry (DecodeBatch), so the engine must copy whatever it keeps.
// Every write command runs on two machines from separate encodings of the
// same entries; one machine's entries are overwritten right after they
// apply. A state that kept an argument would show the garbage: in a later
// reply, a read, or the snapshot.
func TestEngineKeepsNoArgument(t *testing.T) {
	// Keys share the hash tag {t}: SETDLQ and RENAME need one slot.
	entries := [][]Unit{
		{unit(
			cmd("XADD", "{t}s", "1-1", "f1", "v1", "f2", "v2"),
			cmd("XADD", "{t}s", "*", "a", "b"),
			cmd("XADD", "{t}s", "MAXLEN", "~", "100", "*", "x", "y"),
			cmd("XADD", "{t}s", "IDMP", "producer-1", "iid-1", "*", "k", "v"),
			cmd("XADD", "{t}s", "IDMPAUTO", "producer-2", "*", "k", "v2"),
			cmd("XCFGSET", "{t}s", "IDMP-DURATION", "100", "IDMP-MAXSIZE", "50"),
			cmd("XADD", "{t}other", "5-5", "field", "value"),
		)},
		{unit(
			cmd("XGROUP", "CREATE", "{t}s", "group-1", "0"),
			cmd("XGROUP", "CREATE", "{t}new", "group-2", "$", "MKSTREAM", "ENTRIESREAD", "0"),
			cmd("XGROUP", "CREATECONSUMER", "{t}s", "group-1", "alice"),
			cmd("XGROUP", "CREATE", "{t}s", "group-3", "0"),
			cmd("XGROUP", "SETDLQ", "{t}s", "group-3", "1", "{t}dead"),
		), unit(
			cmd("XREADGROUP", "GROUP", "group-1", "bob", "COUNT", "2", "STREAMS", "{t}s", ">"),
			cmd("XREADGROUP", "GROUP", "group-1", "carol", "STREAMS", "{t}s", ">"),
			cmd("XREADGROUP", "GROUP", "group-3", "dan", "STREAMS", "{t}s", ">"),
		)},
		{unit(
			cmd("XCLAIM", "{t}s", "group-1", "erin", "0", "1-1"),
			cmd("XAUTOCLAIM", "{t}s", "group-1", "frank", "0", "0-0", "COUNT", "1"),
			cmd("XAUTOCLAIM", "{t}s", "group-3", "gina", "0", "0-0"),
			cmd("XNACK", "{t}s", "group-1", "FAIL", "IDS", "1", "1-1"),
			cmd("XGROUP", "SETID", "{t}s", "group-3", "0", "ENTRIESREAD", "1"),
			cmd("XREADGROUP", "GROUP", "group-3", "hank", "STREAMS", "{t}s", ">"),
		)},
		{unit(
			cmd("SET", "{t}str", "string-value"),
			cmd("RENAME", "{t}str", "{t}renamed"),
			cmd("RENAME", "{t}other", "{t}moved"),
			cmd("XGROUP", "CREATECONSUMER", "{t}new", "group-2", "ivan"),
			cmd("XGROUP", "CREATE", "{t}new", "group-4", "0"),
			cmd("XGROUP", "DESTROY", "{t}new", "group-4"),
			cmd("XGROUP", "DELCONSUMER", "{t}s", "group-1", "alice"),
			cmd("XADD", "{t}gone", "1-1", "a", "b"),
			cmd("DEL", "{t}gone"),
			cmd("XADD", "{t}gone2", "1-1", "a", "b"),
			cmd("UNLINK", "{t}gone2"),
		)},
		{unit(
			cmd("XADD", "{t}s", "*", "late", "entry"),
			cmd("XREADGROUP", "GROUP", "group-1", "bob", "STREAMS", "{t}s", ">"),
			cmd("XACK", "{t}s", "group-1", "1-1"),
			cmd("XADD", "{t}s", "*", "more", "entries"),
			cmd("XADD", "{t}s", "*", "and", "more"),
			cmd("XTRIM", "{t}s", "MINID", "1-2"),
			cmd("XDEL", "{t}moved", "5-5"),
			cmd("XADD", "{t}s", "1800000000000-1", "for", "xdelex"),
			cmd("XDELEX", "{t}s", "KEEPREF", "IDS", "1", "1800000000000-1"),
			cmd("XSETID", "{t}new", "1000-0", "ENTRIESADDED", "3", "MAXDELETEDID", "500-0"),
			cmd("CONFIG", "SET", "stream-node-max-entries", "50"),
		)},
	}
	reads := [][][]byte{
		cmd("XINFO", "STREAM", "{t}s", "FULL"),
		cmd("XINFO", "STREAM", "{t}new", "FULL"),
		cmd("XINFO", "STREAM", "{t}dead", "FULL"),
		cmd("XINFO", "STREAM", "{t}moved", "FULL"),
		cmd("XINFO", "GROUPS", "{t}s"),
		cmd("XINFO", "CONSUMERS", "{t}s", "group-1"),
		cmd("XPENDING", "{t}s", "group-1", "-", "+", "10"),
		cmd("XRANGE", "{t}s", "-", "+"),
		cmd("GET", "{t}renamed"),
		cmd("SCAN", "0", "COUNT", "100"),
	}
	kept, scribbled := newTestMachine(), newTestMachine()
	var repliesKept, repliesScribbled []string
	for i, units := range entries {
		b := &Batch{TS: int64(1700000000000 + i*1000), Units: units}
		data := EncodeBatch(nil, b)
		for _, r := range kept.ApplyBatch([]*raft.Log{{Index: uint64(i + 1), Type: raft.LogCommand, Data: bytes.Clone(data)}}) {
			for u, rs := range r.([][]engine.Reply) {
				for c, rep := range rs {
					if e, ok := rep.(*engine.Error); ok {
						t.Fatalf("entry %d, %q: %s", i, units[u][c], e.Msg)
					}
					repliesKept = append(repliesKept, formatReply(rep))
				}
			}
		}
		for _, r := range scribbled.ApplyBatch([]*raft.Log{{Index: uint64(i + 1), Type: raft.LogCommand, Data: data}}) {
			for _, rs := range r.([][]engine.Reply) {
				for _, rep := range rs {
					repliesScribbled = append(repliesScribbled, formatReply(rep))
				}
			}
		}
		for j := range data {
			data[j] = 'Z'
		}
	}
	if got, want := strings.Join(repliesScribbled, "\n"), strings.Join(repliesKept, "\n"); got != want {
		t.Fatalf("replies differ once earlier entries were overwritten:\n%s\nwant\n%s", got, want)
	}
	// All entries in one ApplyBatch: each is decoded into the slabs the one
	// before it was cut from, and its replies must still be its own.
	var logs []*raft.Log
	for i, units := range entries {
		logs = append(logs, &raft.Log{Index: uint64(i + 1), Type: raft.LogCommand,
			Data: EncodeBatch(nil, &Batch{TS: int64(1700000000000 + i*1000), Units: units})})
	}
	var repliesOneCall []string
	for _, r := range newTestMachine().ApplyBatch(logs) {
		for _, rs := range r.([][]engine.Reply) {
			for _, rep := range rs {
				repliesOneCall = append(repliesOneCall, formatReply(rep))
			}
		}
	}
	if got, want := strings.Join(repliesOneCall, "\n"), strings.Join(repliesKept, "\n"); got != want {
		t.Fatalf("replies differ when the entries apply in one batch:\n%s\nwant\n%s", got, want)
	}
	for _, argv := range reads {
		var got, want string
		scribbled.view(func(e *engine.Engine) { got = formatReply(e.Exec(1700000009000, argv)) })
		kept.view(func(e *engine.Engine) { want = formatReply(e.Exec(1700000009000, argv)) })
		if strings.Contains(want, "ERR") || got != want {
			t.Fatalf("%q after the entries were overwritten:\n%s\nwant\n%s", argv, got, want)
		}
	}
	if got, want := snapshotBytes(t, scribbled), snapshotBytes(t, kept); !bytes.Equal(got, want) {
		t.Fatalf("snapshots differ once the entries were overwritten (%d and %d bytes)", len(got), len(want))
	}
}

// snapshotBytes is the whole snapshot payload of m's state now.
func snapshotBytes(t *testing.T, m *machine) []byte {
	t.Helper()
	snap, err := m.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := snap.(*fsmSnapshot).writeTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// formatReply renders r with every byte string in full (no pointers).
func formatReply(r engine.Reply) string {
	switch v := r.(type) {
	case engine.Array:
		return formatReplies("[", []engine.Reply(v), "]")
	case engine.Map:
		return formatReplies("map{", []engine.Reply(v), "}")
	case engine.PairMap:
		return formatReplies("pairs{", []engine.Reply(v), "}")
	case engine.Set:
		return formatReplies("set{", []engine.Reply(v), "}")
	case engine.BulkString:
		return strconv.Quote(string(v))
	case *engine.EntryReply:
		return formatReply(v.Array())
	case *engine.Error:
		return "ERR(" + v.Msg + ")"
	default:
		return fmt.Sprintf("%T(%v)", r, r)
	}
}

func formatReplies(open string, rs []engine.Reply, close string) string {
	var b strings.Builder
	b.WriteString(open)
	for i, r := range rs {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(formatReply(r))
	}
	b.WriteString(close)
	return b.String()
}
