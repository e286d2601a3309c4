package fsm

import (
	"bytes"
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
	snap, err := m.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := snap.(*fsmSnapshot).writeTo(&buf); err != nil {
		t.Fatal(err)
	}
	whole := buf.Bytes()
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
	left := 0
	r.m.proposed.Range(func(any, any) bool { left++; return true })
	if left != 0 {
		t.Fatalf("%d answered proposals still remembered", left)
	}
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
