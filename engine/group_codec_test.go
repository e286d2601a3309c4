package engine

import (
	"bytes"
	"encoding/hex"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var rewriteGroupGolden = flag.Bool("rewrite-groups-golden", false, "rewrite testdata/groups_v1.hex")

// goldenGroupState builds a fixed consumer-group state touching every field
// of the encoding: several groups (one with unknown entries-read), consumers
// with and without active-time, NACKs with custom counts and times.
func goldenGroupState(t testing.TB) *Stream {
	e := newTestEngine(12)
	for _, st := range []struct {
		now int64
		cmd string
	}{
		{1000, "XGROUP CREATE s orders 0"},
		{1000, "XGROUP CREATE s audit $ ENTRIESREAD 12"},
		{1000, "XGROUP CREATE s late 5-1"},
		{1100, "XREADGROUP GROUP orders alice COUNT 4 STREAMS s >"},
		{1200, "XREADGROUP GROUP orders bob COUNT 3 STREAMS s >"},
		{1300, "XACK s orders 2-1"},
		{1400, "XCLAIM s orders carol 0 6-1 RETRYCOUNT 7 TIME 900"},
		{1500, "XGROUP CREATECONSUMER s orders dave"},
		{1600, "XREADGROUP GROUP late zed NOACK STREAMS s >"},
	} {
		if r := run(e, st.now, st.cmd); strings.HasPrefix(r, "-") {
			t.Fatalf("%s: %s", st.cmd, r)
		}
	}
	return e.keys["s"].Stream
}

// TestGroupCodecGolden pins the version-1 encoding: a format change must
// fail here and come with a new version (regenerate with
// -rewrite-groups-golden only when the change is intended).
func TestGroupCodecGolden(t *testing.T) {
	got := hex.EncodeToString(goldenGroupState(t).appendGroupsSnapshot(nil))
	path := filepath.Join("testdata", "groups_v1.hex")
	if *rewriteGroupGolden {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -rewrite-groups-golden to create it)", err)
	}
	if got != strings.TrimSpace(string(want)) {
		t.Fatalf("group snapshot encoding changed:\n got  %s\n want %s", got, want)
	}
	// And it decodes back to the same state.
	b, _ := hex.DecodeString(got)
	s := NewStream()
	if rest, err := s.loadGroupsSnapshot(b); err != nil || len(rest) != 0 {
		t.Fatalf("decode golden: rest %d err %v", len(rest), err)
	}
	if again := s.appendGroupsSnapshot(nil); !bytes.Equal(again, b) {
		t.Fatal("golden re-encodes differently")
	}
}

// FuzzGroupsSnapshot: decoding arbitrary bytes never panics, and whatever
// decodes satisfies the group invariants and re-encodes to a prefix-equal
// encoding.
func FuzzGroupsSnapshot(f *testing.F) {
	f.Add(goldenGroupState(f).appendGroupsSnapshot(nil))
	f.Add([]byte{1, 0})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		s := NewStream()
		rest, err := s.loadGroupsSnapshot(b)
		if err != nil {
			return
		}
		for _, g := range s.Groups {
			total := 0
			for _, c := range g.Consumers {
				total += c.PEL.Len()
			}
			if total != g.PEL.Len() {
				t.Fatalf("consumer PELs %d, group PEL %d", total, g.PEL.Len())
			}
		}
		enc := s.appendGroupsSnapshot(nil)
		s2 := NewStream()
		if _, err := s2.loadGroupsSnapshot(enc); err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if !bytes.Equal(s2.appendGroupsSnapshot(nil), enc) {
			t.Fatal("encoding not stable")
		}
		_ = rest
	})
}

// TestGroupSnapshotRestore checks consumer-group state through a whole
// engine snapshot and restore: the restored engine answers every group query
// identically and keeps behaving identically under further commands.
func TestGroupSnapshotRestore(t *testing.T) {
	e := New(DefaultConfig())
	e.Exec(1, [][]byte{[]byte("XGROUP"), []byte("CREATE"), []byte("empty"), []byte("g"), []byte("$"), []byte("MKSTREAM")})
	s := goldenGroupState(t)
	e.keys["s"] = &Value{Kind: KindStream, Stream: s}
	var buf bytes.Buffer
	if _, err := e.Snapshot().WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	r, err := Restore(&buf)
	if err != nil {
		t.Fatal(err)
	}
	for i, cmd := range []string{
		"XINFO STREAM s FULL COUNT 0", "XINFO GROUPS s", "XINFO CONSUMERS s orders", "XINFO GROUPS empty",
		"XPENDING s orders", "XPENDING s orders - + 100",
		"XREADGROUP GROUP orders bob STREAMS s 0", "XREADGROUP GROUP orders erin STREAMS s >",
		"XAUTOCLAIM s orders frank 0 0 COUNT 3", "XCLAIM s orders alice 0 1-1 6-1",
		"XACK s orders 1-1 3-1", "XGROUP DELCONSUMER s orders bob", "XINFO STREAM s FULL COUNT 0",
	} {
		want := run(e, 5000+int64(i), cmd)
		if got := run(r, 5000+int64(i), cmd); got != want {
			t.Fatalf("%s after restore:\n got  %s\n want %s", cmd, got, want)
		}
	}
	checkGroupInvariants(t, r.keys["s"].Stream, "restored")
}
