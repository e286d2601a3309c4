package engine

import (
	"bytes"
	"fmt"
	"testing"
)

// The stream extension codec (IDMP state, dead-letter settings) round-trips
// and rejects malformed input.
func TestStreamExtCodec(t *testing.T) {
	e := New(DefaultConfig())
	for _, c := range []string{
		"XGROUP CREATE {s} g1 0 MKSTREAM", "XGROUP CREATE {s} g2 0",
		"XGROUP SETDLQ {s} g2 4 {s}:dead",
		"XADD {s} IDMP b x * f 1", "XADD {s} IDMP a y * f 2", "XADD {s} IDMP a z * f 3", "XADD {s} IDMP a y * f 2",
		"XCFGSET {s} IDMP-DURATION 9",
		"XADD {s} IDMPAUTO a * f 4",
	} {
		if r := run(e, 5, c); len(r) > 0 && r[0] == '-' {
			t.Fatalf("%s: %s", c, r)
		}
	}
	s := e.keys["{s}"].Stream
	enc := s.appendExtSnapshot(nil)
	s2 := NewStream()
	s2.createGroup([]byte("g1"), ID{}, 0)
	s2.createGroup([]byte("g2"), ID{}, 0)
	rest, err := s2.loadExtSnapshot(append(bytes.Clone(enc), 0xAA))
	if err != nil || !bytes.Equal(rest, []byte{0xAA}) {
		t.Fatalf("decode: rest %x err %v", rest, err)
	}
	if !bytes.Equal(s2.appendExtSnapshot(nil), enc) {
		t.Fatal("re-encoding differs")
	}
	if g := s2.lookupGroup([]byte("g2")); g.DLQMax != 4 || g.DLQKey != "{s}:dead" {
		t.Fatalf("dead-letter setting %d %q", g.DLQMax, g.DLQKey)
	}
	// XCFGSET changed the duration, clearing the history: only the
	// IDMPAUTO record remains.
	iid := idmpAutoIID([][]byte{[]byte("f"), []byte("4")})
	want, _ := s.idmp.lookup("a", iid)
	if id, ok := s2.idmp.lookup("a", iid); !ok || id != want || want.IsZero() {
		t.Fatalf("idmp lookup %v %v, want %v", id, ok, want)
	}
	if _, ok := s2.idmp.lookup("a", "y"); ok {
		t.Fatal("cleared iid survives")
	}
	if s2.idmp.added != 4 || s2.idmp.dups != 1 || s2.idmp.duration != 9 {
		t.Fatalf("idmp counters %+v", *s2.idmp)
	}
	// Truncations and a setting for a group that does not exist fail.
	for i := 0; i < len(enc); i++ {
		s3 := NewStream()
		s3.createGroup([]byte("g1"), ID{}, 0)
		s3.createGroup([]byte("g2"), ID{}, 0)
		if _, err := s3.loadExtSnapshot(enc[:i]); err == nil {
			t.Fatalf("truncated at %d decodes", i)
		}
	}
	s4 := NewStream()
	s4.createGroup([]byte("g1"), ID{}, 0)
	if _, err := s4.loadExtSnapshot(enc); err == nil {
		t.Fatal("dead-letter setting of a missing group decodes")
	}
}

// Entries released by XNACK keep, through a group snapshot, their missing
// owner and their NACK-zone order; equal zones encode to equal bytes.
func TestGroupCodecNackZone(t *testing.T) {
	e := newPolicyEngine(t, 4, 4)
	for _, c := range []string{
		"XNACK s g FAIL IDS 2 3-1 1-1", "XNACK s g FATAL IDS 1 2-1", "XNACK s g FAIL IDS 1 3-1",
		"XREADGROUP GROUP g d COUNT 1 CLAIM 0 STREAMS s >", // takes 1-1 out of the zone
	} {
		if r := run(e, 5, c); len(r) > 0 && r[0] == '-' {
			t.Fatalf("%s: %s", c, r)
		}
	}
	s := e.keys["s"].Stream
	enc := s.appendGroupsSnapshot(nil)
	s2 := NewStream()
	if _, err := s2.loadGroupsSnapshot(enc); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(s2.appendGroupsSnapshot(nil), enc) {
		t.Fatal("re-encoding differs")
	}
	checkGroupInvariants(t, s2, "decoded")
	e2 := New(Config{NodeMaxEntries: 3})
	e2.keys["s"] = &Value{Kind: KindStream, Stream: s}
	for _, eng := range []*Engine{e, e2} {
		if eng == e2 {
			s.Groups = s2.Groups
		}
		if got, want := run(eng, 6, "XPENDING s g - + 10"), "[[1-1 d 1 2] [2-1  -1 "+fmt.Sprint(int64(nackFatalCount))+"] [3-1  -1 1] [4-1 c 4 1]]"; got != want {
			t.Fatalf("XPENDING: got %s want %s", got, want)
		}
		// The zone order is 2-1 then 3-1 (3-1 was released again last).
		if got, want := run(eng, 6, "XREADGROUP GROUP g x COUNT 2 CLAIM 0 STREAMS s >"), "[s [[2-1 [f 2] 6 "+fmt.Sprint(int64(nackFatalCount))+"] [3-1 [f 3] 6 1]]]"; got != want {
			t.Fatalf("CLAIM: got %s want %s", got, want)
		}
		if eng == e {
			// Restore the zone for the decoded copy.
			if _, err := s2.loadGroupsSnapshot(enc); err != nil {
				t.Fatal(err)
			}
		}
	}
}
