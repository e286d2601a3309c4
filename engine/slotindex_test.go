package engine

import (
	"bytes"
	"math/rand"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/raftstream/raftstream/slots"
)

func slotArgv(args ...string) [][]byte {
	out := make([][]byte, len(args))
	for i, a := range args {
		out[i] = []byte(a)
	}
	return out
}

// checkSlotIndex compares the slot index with a scan of the keyspace.
func checkSlotIndex(t *testing.T, e *Engine, when string) {
	t.Helper()
	want := map[int][]string{}
	for k := range e.keys {
		s := slots.OfString(k)
		want[s] = append(want[s], k)
	}
	total := 0
	for s, ks := range e.slotKeys {
		total += len(ks)
		if len(ks) == 0 {
			t.Fatalf("%s: slot %d indexed with no keys", when, s)
		}
	}
	if total != len(e.keys) {
		t.Fatalf("%s: index holds %d keys, keyspace %d", when, total, len(e.keys))
	}
	for s, ks := range want {
		slices.Sort(ks)
		if got := e.KeysInSlot(s, -1); !slices.Equal(got, ks) {
			t.Fatalf("%s: KeysInSlot(%d) = %v, want %v", when, s, got, ks)
		}
		if e.CountKeysInSlot(s) != len(ks) {
			t.Fatalf("%s: CountKeysInSlot(%d) = %d, want %d", when, s, e.CountKeysInSlot(s), len(ks))
		}
	}
}

// TestSlotIndexFollowsTheKeyspace drives every way a key is created or
// deleted (XADD, XGROUP CREATE MKSTREAM, SET, DEL, UNLINK, RENAME,
// RENAMENX, FLUSHALL, a dead-letter stream, RestoreKey, Restore) and checks
// the index against the keyspace after each command.
func TestSlotIndexFollowsTheKeyspace(t *testing.T) {
	seed := int64(20261231)
	t.Logf("seed %d", seed)
	rnd := rand.New(rand.NewSource(seed))
	e := New(DefaultConfig())
	keys := []string{"a", "b", "{t}x", "{t}y", "orders:{1}", "orders:{2}", "c"}
	pick := func() string { return keys[rnd.Intn(len(keys))] }
	for i := 0; i < 3000; i++ {
		var argv [][]byte
		switch rnd.Intn(9) {
		case 0, 1, 2:
			argv = slotArgv("XADD", pick(), "*", "f", strconv.Itoa(i))
		case 3:
			argv = slotArgv("XGROUP", "CREATE", pick(), "g", "0", "MKSTREAM")
		case 4:
			argv = slotArgv("SET", pick(), "v")
		case 5:
			argv = slotArgv("DEL", pick(), pick())
		case 6:
			argv = slotArgv("RENAME", pick(), pick())
		case 7:
			argv = slotArgv("RENAMENX", pick(), pick())
		case 8:
			if rnd.Intn(20) == 0 {
				argv = slotArgv("FLUSHALL")
			} else {
				argv = slotArgv("UNLINK", pick())
			}
		}
		e.Exec(int64(1_700_000_000_000+i), argv)
		checkSlotIndex(t, e, string(bytes.Join(argv, []byte(" "))))
	}
	var b bytes.Buffer
	if _, err := e.Snapshot().WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	e2, err := Restore(&b)
	if err != nil {
		t.Fatal(err)
	}
	checkSlotIndex(t, e2, "after Restore")
	if got := e2.SlotsWithKeys(slots.Range{First: 0, Last: slots.Count - 1}); len(got) != len(e2.slotKeys) {
		t.Fatalf("SlotsWithKeys: %d slots, index %d", len(got), len(e2.slotKeys))
	}
}

// TestDumpKeyRoundTrip moves every key of a random engine, one by one, into
// an empty engine through DumpKey/RestoreKey: the two engines then encode
// to the same snapshot bytes (streams whole: entries, groups, PELs with
// delivery counts and owners, IDMP tables, dead-letter settings; every
// key's expiry), and the source's keys are indexed in the target.
func TestDumpKeyRoundTrip(t *testing.T) {
	for seed := int64(1); seed <= 4; seed++ {
		rnd := rand.New(rand.NewSource(seed))
		r := newModelRun(t, rnd)
		for i := 0; i < 300; i++ {
			r.step()
		}
		r.exec("SET", "str", "hello")
		r.exec("XGROUP", "CREATE", "s1", "g1", "0")
		r.exec("XREADGROUP", "GROUP", "g1", "alice", "COUNT", "3", "STREAMS", "s1", ">")
		r.exec("XREADGROUP", "GROUP", "g1", "bob", "COUNT", "2", "STREAMS", "s1", ">")
		r.exec("XADD", "s2", "IDMP", "p1", "i1", "*", "f", "v")
		r.exec("XGROUP", "SETDLQ", "s1", "g1", "3", "s1:dlq")
		// Expiries move with their keys (a string and a stream).
		for _, k := range []string{"str", "s2"} {
			if got := r.exec("PEXPIREAT", k, "4102444800000"); got != Integer(1) {
				t.Fatalf("PEXPIREAT %s: %v", k, got)
			}
		}
		dst := New(r.e.Config())
		for _, k := range r.e.sortedKeys() {
			data, ok := r.e.DumpKey(k)
			if !ok {
				t.Fatalf("DumpKey(%q) missing", k)
			}
			got, err := dst.RestoreKey(data)
			if err != nil || got != k {
				t.Fatalf("RestoreKey(%q) = %q, %v", k, got, err)
			}
		}
		if a, b := snapBytes(t, r.e), snapBytes(t, dst); !bytes.Equal(a, b) {
			t.Fatalf("seed %d: engines differ after moving every key (%d vs %d bytes)", seed, len(a), len(b))
		}
		checkSlotIndex(t, dst, "after RestoreKey")
		for _, k := range []string{"str", "s2"} {
			if got := dst.Exec(1, [][]byte{[]byte("PEXPIRETIME"), []byte(k)}); got != Integer(4102444800000) {
				t.Fatalf("PEXPIRETIME %s after RestoreKey: %v", k, got)
			}
		}
		if _, ok := r.e.DumpKey("nope"); ok {
			t.Fatal("DumpKey of a missing key")
		}
		data, _ := r.e.DumpKey("str")
		data[len(data)/2] ^= 0xff
		if _, err := dst.RestoreKey(data); err == nil {
			t.Fatal("RestoreKey accepted a damaged encoding")
		}
	}
}

// TestSlotsUsageSumsMemoryUsage: SlotsUsage reports, for each slot that
// holds keys, their count and the sum of MEMORY USAGE of its keys.
func TestSlotsUsageSumsMemoryUsage(t *testing.T) {
	e := New(DefaultConfig())
	now := int64(1_700_000_000_000)
	for i := 0; i < 40; i++ {
		k := "orders:{" + strconv.Itoa(i%7) + "}:" + strconv.Itoa(i%3)
		e.Exec(now, slotArgv("XADD", k, "*", "f", strings.Repeat("v", i*10)))
	}
	e.Exec(now, slotArgv("SET", "plain", "value"))
	got := e.SlotsUsage()
	want := map[int]SlotUsage{}
	for k := range e.keys {
		s := slots.OfString(k)
		u := want[s]
		u.Slot, u.Keys = s, u.Keys+1
		u.Bytes += int64(e.Exec(now, slotArgv("MEMORY", "USAGE", k)).(Integer))
		want[s] = u
	}
	if len(got) != len(want) {
		t.Fatalf("SlotsUsage has %d slots, keyspace %d", len(got), len(want))
	}
	for i, u := range got {
		if i > 0 && got[i-1].Slot >= u.Slot {
			t.Fatalf("not in slot order: %v", got)
		}
		if w := want[u.Slot]; u != w || u.Bytes <= 0 {
			t.Fatalf("slot %d: %+v, want %+v", u.Slot, u, w)
		}
	}
}
