package fsm

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/raftstream/raftstream/engine"
	"github.com/raftstream/raftstream/slots"
)

// testKeysOf knows the keys of the commands these tests send.
func testKeysOf(argv [][]byte) []int {
	switch strings.ToUpper(string(argv[0])) {
	case "XADD", "XLEN", "XRANGE", "SET", "GET":
		return []int{1}
	case "XGROUP":
		return []int{2}
	case "DEL", "EXISTS", "RENAME":
		out := make([]int, 0, len(argv)-1)
		for i := 1; i < len(argv); i++ {
			out = append(out, i)
		}
		return out
	}
	return nil
}

func newMoveMachine() *machine {
	m := newTestMachine()
	m.keysOf = testKeysOf
	return m
}

// applyUnits applies one entry holding units and returns its replies.
func applyUnits(m *machine, units ...Unit) [][]engine.Reply {
	out := m.ApplyBatch([]*raft.Log{{Type: raft.LogCommand, Data: EncodeBatch(nil, &Batch{TS: 1_700_000_000_000, Units: units})}})
	return out[0].([][]engine.Reply)
}

// run applies one command alone and returns its reply.
func run(m *machine, args ...string) engine.Reply { return applyUnits(m, unit(cmd(args...)))[0][0] }

// verdict is how a reply reads in these tests: "ask <slot> <shard>",
// "moved …", "tryagain" or the reply itself.
func verdict(r engine.Reply) string {
	if rd, ok := AsRedirect(r); ok {
		switch rd.Kind {
		case RedirectAsk:
			return fmt.Sprintf("ask %d %d", rd.Slot, rd.Shard)
		case RedirectMoved:
			return fmt.Sprintf("moved %d %d", rd.Slot, rd.Shard)
		default:
			return "tryagain"
		}
	}
	switch v := r.(type) {
	case engine.BulkString:
		return string(v)
	case *engine.Error:
		return v.Msg
	case engine.Array:
		parts := make([]string, len(v))
		for i, x := range v {
			parts[i] = verdict(x)
		}
		return "[" + strings.Join(parts, " ") + "]"
	}
	return fmt.Sprint(r)
}

// tagKeys returns n keys sharing one hash tag, and their slot.
func tagKeys(tag string, n int) ([]string, int) {
	var out []string
	for i := 0; i < n; i++ {
		out = append(out, fmt.Sprintf("{%s}k%d", tag, i))
	}
	return out, slots.OfString(tag)
}

// TestSlotMoveSourceVerdicts walks the source side of a move: after the
// fence, keys here are served, a new key is sent to B with ASK, a key in
// transit gets TRYAGAIN, a command with keys on both sides gets TRYAGAIN;
// exported keys are deleted (then ASK); MIGRATED is refused while a key is
// left; after MIGRATED everything is ASK, after DONE MOVED. A unit with one
// redirected command applies nothing.
func TestSlotMoveSourceVerdicts(t *testing.T) {
	m := newMoveMachine()
	keys, sl := tagKeys("a", 3)
	other, _ := tagKeys("other", 1)
	ss := strconv.Itoa(sl)
	for _, k := range keys[:2] {
		run(m, "XADD", k, "1-1", "f", "v")
	}
	run(m, "XADD", other[0], "1-1", "f", "v")
	if got := run(m, "RSSLOTS", "MIGRATING", "7", ss, ss, "2"); got != engine.OK {
		t.Fatalf("MIGRATING: %v", got)
	}
	if got := run(m, "RSSLOTS", "MIGRATING", "7", ss, ss, "2"); got != engine.OK {
		t.Fatalf("MIGRATING again: %v", got)
	}
	if got := run(m, "RSSLOTS", "MIGRATING", "8", ss, ss, "3"); !strings.Contains(verdict(got), "migrating (move 7)") {
		t.Fatalf("MIGRATING of another move: %v", got)
	}
	want := func(what string, got engine.Reply, v string) {
		t.Helper()
		if verdict(got) != v {
			t.Fatalf("%s: %s, want %s", what, verdict(got), v)
		}
	}
	want("XADD to a key here", run(m, "XADD", keys[0], "2-1", "f", "v"), "2-1")
	want("XADD to a new key", run(m, "XADD", keys[2], "1-1", "f", "v"), "ask "+ss+" 2")
	want("EXISTS here and missing", run(m, "EXISTS", keys[0], keys[2]), "tryagain")
	want("EXISTS both here", run(m, "EXISTS", keys[0], keys[1]), "2")
	want("another slot", run(m, "XADD", other[0], "2-1", "f", "v"), "2-1")

	// One unit: a served command and a redirected one: nothing applies.
	rs := applyUnits(m, unit(cmd("XADD", keys[0], "3-1", "f", "v"), cmd("XADD", keys[2], "1-1", "f", "v")))[0]
	want("unit: first", rs[0], "tryagain")
	want("unit: second", rs[1], "ask "+ss+" 2")
	want("after the refused unit", run(m, "XLEN", keys[0]), "2")

	got := run(m, "RSSLOTS", "EXPORT", "7", keys[0], keys[2], other[0])
	if a, ok := got.(engine.Array); !ok || len(a) != 1 || string(a[0].(engine.BulkString)) != keys[0] {
		t.Fatalf("EXPORT: %v", got)
	}
	want("a key in transit", run(m, "XLEN", keys[0]), "tryagain")
	if got := run(m, "RSSLOTS", "MIGRATED", "7", ss, ss); !strings.Contains(verdict(got), "keys") {
		t.Fatalf("MIGRATED with keys left: %v", got)
	}
	want("EXPORTED", run(m, "RSSLOTS", "EXPORTED", "7", keys[0], keys[1]), "1") // keys[1] is not in transit
	want("an exported key", run(m, "XLEN", keys[0]), "ask "+ss+" 2")
	run(m, "RSSLOTS", "EXPORT", "7", keys[1])
	if got := run(m, "RSSLOTS", "MIGRATED", "7", ss, ss); !strings.Contains(verdict(got), "ERR RSSLOTS migrated") {
		t.Fatalf("MIGRATED with a key in transit: %v", got)
	}
	run(m, "RSSLOTS", "EXPORTED", "7", keys[1])
	want("MIGRATED", run(m, "RSSLOTS", "MIGRATED", "7", ss, ss), "OK")
	want("after MIGRATED", run(m, "XADD", keys[1], "5-1", "f", "v"), "ask "+ss+" 2")
	want("DONE", run(m, "RSSLOTS", "DONE", "7", ss, ss), "OK")
	want("after DONE", run(m, "XADD", keys[1], "5-1", "f", "v"), "moved "+ss+" 2")
	want("DONE again", run(m, "RSSLOTS", "DONE", "7", ss, ss), "OK")
	want("MIGRATED after DONE", run(m, "RSSLOTS", "MIGRATED", "7", ss, ss), "OK")
	want("another slot still served", run(m, "XLEN", other[0]), "2")
	m.view(func(e *engine.Engine) {
		if n := e.CountKeysInSlot(sl); n != 0 {
			t.Fatalf("%d keys left in the moved slot", n)
		}
	})
}

// TestSlotMoveTargetVerdicts walks the target side: before IMPORTED only
// ASKING units are served (others MOVED to the source); keys arrive whole
// (PUT) or in chunks (CHUNK, COMMIT, checked by length and CRC); a key that
// is already here is never overwritten; IMPORTED makes the slot owned, and
// a late IMPORTING of the same move changes nothing.
func TestSlotMoveTargetVerdicts(t *testing.T) {
	src := newMoveMachine()
	dst := newMoveMachine()
	keys, sl := tagKeys("b", 3)
	ss := strconv.Itoa(sl)
	for i, k := range keys[:2] {
		for j := 1; j <= 50+i*200; j++ {
			run(src, "XADD", k, fmt.Sprintf("%d-1", j), "f", strings.Repeat("x", 40))
		}
	}
	run(src, "XGROUP", "CREATE", keys[0], "g", "0")
	want := func(what string, got engine.Reply, v string) {
		t.Helper()
		if verdict(got) != v {
			t.Fatalf("%s: %s, want %s", what, verdict(got), v)
		}
	}
	want("IMPORTING", run(dst, "RSSLOTS", "IMPORTING", "3", ss, ss, "0"), "OK")
	want("no ASKING", run(dst, "XADD", keys[2], "1-1", "f", "v"), "moved "+ss+" 0")
	ask := func(args ...string) engine.Reply {
		return applyUnits(dst, AskingUnit(unit(cmd(args...))))[0][1]
	}
	want("ASKING, a new key", ask("XADD", keys[2], "1-1", "f", "v"), "1-1")
	want("ASKING, multi-key with one missing", ask("EXISTS", keys[2], keys[0]), "tryagain")

	var small, big []byte
	src.view(func(e *engine.Engine) {
		small, _ = e.DumpKey(keys[0])
		big, _ = e.DumpKey(keys[1])
	})
	want("PUT", run(dst, "RSSLOTS", "PUT", "3", keys[0], string(small)), "[ok]")
	want("PUT again", run(dst, "RSSLOTS", "PUT", "3", keys[0], string(small)), "[exists]")
	half := len(big) / 2
	crc := strconv.FormatUint(uint64(crc32.Checksum(big, castagnoli)), 10)
	tot := strconv.Itoa(len(big))
	want("CHUNK 1", run(dst, "RSSLOTS", "CHUNK", "3", keys[1], tot, "0", string(big[:half])), strconv.Itoa(half))
	want("CHUNK out of place", run(dst, "RSSLOTS", "CHUNK", "3", keys[1], tot, "7", "x"), strconv.Itoa(half))
	want("COMMIT short", run(dst, "RSSLOTS", "COMMIT", "3", keys[1], tot, crc), verdict(engine.Errorf("ERR RSSLOTS commit: key %q staged %d bytes, not the %d sent (start over)", keys[1], half, len(big))))
	run(dst, "RSSLOTS", "CHUNK", "3", keys[1], tot, "0", string(big[:half]))

	// The staged bytes survive a snapshot round trip.
	dst2 := roundTrip(t, dst)
	for _, m := range []*machine{dst, dst2} {
		want("CHUNK 2", run(m, "RSSLOTS", "CHUNK", "3", keys[1], tot, strconv.Itoa(half), string(big[half:])), tot)
		want("COMMIT", run(m, "RSSLOTS", "COMMIT", "3", keys[1], tot, crc), "ok")
		want("XLEN of the committed key", applyUnits(m, AskingUnit(unit(cmd("XLEN", keys[1]))))[0][1], "250")
		want("IMPORTED", run(m, "RSSLOTS", "IMPORTED", "3", ss, ss), "OK")
		want("IMPORTING after IMPORTED", run(m, "RSSLOTS", "IMPORTING", "3", ss, ss, "0"), "OK")
		want("owned: no ASKING needed", run(m, "XLEN", keys[0]), "50")
		want("PUT after IMPORTED", run(m, "RSSLOTS", "PUT", "3", keys[0], string(small)), "[exists]")
	}
	if a, b := snapshotBytes(t, dst), snapshotBytes(t, dst2); !bytes.Equal(a, b) {
		t.Fatal("a replica restored from a snapshot mid-import diverged from one that applied every entry")
	}
}

// roundTrip persists m's snapshot and restores it into a new machine.
func roundTrip(t *testing.T, m *machine) *machine {
	t.Helper()
	m2 := newMoveMachine()
	if err := m2.Restore(nopCloser{bytes.NewReader(snapshotBytes(t, m))}); err != nil {
		t.Fatal(err)
	}
	return m2
}

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }

// TestSnapshotHeaderGolden pins the snapshot header encodings: version 2
// with slot-move state, and version 1 (written by earlier builds), which
// must still be read. go test ./fsm -run SnapshotHeaderGolden -update
// rewrites the version 2 file (only with a new snapshotVersion).
func TestSnapshotHeaderGolden(t *testing.T) {
	mg := newMigration()
	mg.set(5, slotMigrating, 7, 2)
	mg.set(6, slotGone, 3, 1)
	mg.set(9000, slotImporting, 9, 0)
	mg.transit["{a}k"] = 7
	mg.staged[stageKey{9, "{z}big"}] = []byte("part")
	mg.imported[4] = true
	h := snapshotHeader{LastNow: 1_700_000_000_123, Shard: 3, Engine: engine.Config{NodeMaxBytes: 4096, NodeMaxEntries: 100}, Migration: mg}
	got := h.appendTo(nil)
	path := filepath.Join("testdata", "snapshot_v2.golden")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("snapshot header encoding changed:\n got %x\nwant %x", got, want)
	}
	empty := engineBytes(t)
	h2, _, err := readSnapshot(bytes.NewReader(append(bytes.Clone(want), empty...)))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(h2.appendTo(nil), want) {
		t.Fatal("version 2 header does not round-trip")
	}
	// Version 1: the same fields, no migration state.
	v1 := []byte("rsfsm\x01")
	for _, v := range []uint64{1_700_000_000_123, 3, 4096, 100} {
		v1 = appendUvarintTest(v1, v)
	}
	h1, _, err := readSnapshot(bytes.NewReader(append(v1, empty...)))
	if err != nil || h1.Migration != nil || h1.Shard != 3 || h1.LastNow != 1_700_000_000_123 {
		t.Fatalf("version 1: %+v %v", h1, err)
	}
}

func appendUvarintTest(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

func engineBytes(t *testing.T) []byte {
	var b bytes.Buffer
	if _, err := engine.New(engine.DefaultConfig()).Snapshot().WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestReadCheckedRedirects: a checked read answers what Apply would.
func TestReadCheckedRedirects(t *testing.T) {
	m := newMoveMachine()
	keys, sl := tagKeys("c", 2)
	ss := strconv.Itoa(sl)
	run(m, "XADD", keys[0], "1-1", "f", "v")
	run(m, "RSSLOTS", "MIGRATING", "1", ss, ss, "4")
	run(m, "RSSLOTS", "EXPORT", "1", keys[0])
	m.view(func(e *engine.Engine) {
		check := m.checker()
		if v := verdict(check(cmd("XLEN", keys[0]), false)); v != "tryagain" {
			t.Errorf("read of a key in transit: %s", v)
		}
		if v := verdict(check(cmd("XLEN", keys[1]), false)); v != "ask "+ss+" 4" {
			t.Errorf("read of a missing key: %s", v)
		}
		if check(cmd("XLEN", "elsewhere"), false) != nil {
			t.Error("read of another slot redirected")
		}
	})
}
