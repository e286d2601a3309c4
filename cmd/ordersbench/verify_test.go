package main

import (
	"errors"
	"fmt"
	"testing"
)

// goodHistory is 3 orders over 2 partitions, each consumed once by both
// groups in stream order.
func goodHistory() History {
	acked := []Produced{
		{Key: newOrderKey(0, 1), Part: 0, ID: EntryID{100, 0}},
		{Key: newOrderKey(0, 2), Part: 1, ID: EntryID{100, 1}},
		{Key: newOrderKey(1, 1), Part: 0, ID: EntryID{101, 0}},
	}
	deliver := func() []Consumed {
		var cs []Consumed
		for _, p := range acked {
			cs = append(cs, Consumed{Key: p.Key, Part: p.Part, ID: p.ID})
		}
		return cs
	}
	return History{
		Groups:   []string{"billing", "analytics"},
		Acked:    acked,
		Consumed: map[string][]Consumed{"billing": deliver(), "analytics": deliver()},
	}
}

func TestVerifyCleanHistory(t *testing.T) {
	v := Verify(goodHistory())
	if !v.OK || v.Acked != 3 {
		t.Fatalf("clean history rejected: %+v", v)
	}
	for _, g := range v.Groups {
		if g.Unique != 3 || g.Missing+g.Duplicates+g.Stray+g.OutOfOrder != 0 {
			t.Fatalf("group %s: %+v", g.Group, g)
		}
	}
}

func TestVerifyFlagsMissingAck(t *testing.T) {
	h := goodHistory()
	h.Consumed["analytics"] = h.Consumed["analytics"][:2] // order 1-1 never delivered
	v := Verify(h)
	if v.OK {
		t.Fatalf("missing delivery not flagged: %+v", v)
	}
	a := v.Groups[1]
	if a.Group != "analytics" || a.Missing != 1 || len(a.Examples) != 1 || a.Examples[0] != "missing 1-1" {
		t.Fatalf("analytics verdict: %+v", a)
	}
	if v.Groups[0].Missing != 0 {
		t.Fatalf("billing should be clean: %+v", v.Groups[0])
	}
}

func TestVerifyReportsDuplicatesSeparately(t *testing.T) {
	h := goodHistory()
	// A redelivery through XAUTOCLAIM (at-least-once): allowed, but counted.
	h.Consumed["billing"] = append(h.Consumed["billing"], Consumed{Key: newOrderKey(0, 2), Part: 1, ID: EntryID{100, 1}, Claimed: true})
	h.Consumed["billing"] = append(h.Consumed["billing"], Consumed{Key: newOrderKey(0, 2), Part: 1, ID: EntryID{100, 1}, Claimed: true})
	v := Verify(h)
	b := v.Groups[0]
	if !v.OK || b.Duplicates != 2 || b.DuplicatedEntries != 1 || b.Unique != 3 || b.Deliveries != 5 {
		t.Fatalf("duplicate accounting: ok=%v %+v", v.OK, b)
	}
}

func TestVerifyFlagsStrayAndOutOfOrder(t *testing.T) {
	h := goodHistory()
	// An order consumed with a different entry ID: a second copy was written.
	h.Consumed["billing"] = append(h.Consumed["billing"], Consumed{Key: newOrderKey(1, 1), Part: 0, ID: EntryID{200, 0}})
	// A phantom order never produced.
	h.Consumed["billing"] = append(h.Consumed["billing"], Consumed{Key: newOrderKey(9, 9), Part: 1, ID: EntryID{300, 0}})
	// An order delivered from the wrong partition.
	h.Consumed["billing"] = append(h.Consumed["billing"], Consumed{Key: newOrderKey(0, 1), Part: 1, ID: EntryID{100, 0}, Claimed: true})
	v := Verify(h)
	if v.OK || v.Groups[0].Stray != 2 || v.Groups[0].DuplicateWrites != 1 {
		t.Fatalf("stray deliveries not flagged: %+v", v.Groups[0])
	}
	// A client that retries writes may legitimately store an order twice.
	h.ClientRetries = true
	h.Consumed["billing"] = h.Consumed["billing"][:4]
	if v := Verify(h); !v.OK || v.Groups[0].DuplicateWrites != 1 {
		t.Fatalf("duplicate write with client retries: ok=%v %+v", v.OK, v.Groups[0])
	}

	h = goodHistory()
	c := h.Consumed["analytics"]
	c[0], c[2] = c[2], c[0] // partition 0 delivered 101-0 before 100-0
	v = Verify(h)
	if v.OK || v.Groups[1].OutOfOrder != 1 {
		t.Fatalf("out-of-order delivery not flagged: %+v", v.Groups[1])
	}
}

func TestVerifyUnknownOutcomeAndTrimming(t *testing.T) {
	h := goodHistory()
	// A produce whose reply was lost but which was written: delivered, fine.
	h.Unknown = []OrderKey{newOrderKey(2, 1), newOrderKey(2, 2)}
	h.Consumed["billing"] = append(h.Consumed["billing"], Consumed{Key: newOrderKey(2, 1), Part: 1, ID: EntryID{400, 0}})
	// MAXLEN trimmed partition 0 up to 101-0 before analytics read 100-0.
	h.Consumed["analytics"] = h.Consumed["analytics"][1:]
	h.FirstID = map[int32]EntryID{0: {101, 0}, 1: {100, 1}}
	v := Verify(h)
	if !v.OK || v.Unknown != 2 || v.Groups[0].UnknownOutcome != 1 || v.Groups[1].Trimmed != 1 || v.Groups[1].Missing != 0 {
		t.Fatalf("unknown/trimmed accounting: %+v", v)
	}
	// Without trimming information the same gap is a missing entry.
	h.FirstID = nil
	if v := Verify(h); v.OK || v.Groups[1].Missing != 1 {
		t.Fatalf("gap without MAXLEN must be missing: %+v", v.Groups[1])
	}
}

func TestOrderIDRoundTrip(t *testing.T) {
	k := newOrderKey(49, 123456789)
	id := orderID("r1a2", k)
	if got, ok := parseOrderID("r1a2", id); !ok || got != k {
		t.Fatalf("parseOrderID(%q) = %v, %v", id, got, ok)
	}
	for _, bad := range []string{"other-49-1", "r1a2-49", "r1a2-x-1", "r1a2-49-1-2", ""} {
		if _, ok := parseOrderID("r1a2", bad); ok {
			t.Errorf("parseOrderID(%q) accepted", bad)
		}
	}
	if id, err := ParseEntryID("1700000000000-42"); err != nil || id != (EntryID{1700000000000, 42}) || id.String() != "1700000000000-42" {
		t.Fatalf("ParseEntryID: %v %v", id, err)
	}
	if _, err := ParseEntryID("12"); err == nil {
		t.Fatalf("ParseEntryID accepted 12")
	}
}

func TestErrorLogGroupsRedirectsAndBoundsKinds(t *testing.T) {
	var l errorLog
	l.add("xadd", errors.New("MOVED 9842 127.0.0.1:1"))
	l.add("xadd", errors.New("MOVED 115 127.0.0.1:2"))
	for i := range maxErrorKinds + 5 {
		l.add("xack", fmt.Errorf("err %d", i))
	}
	s := l.Summary()
	if s[0] != "2× xadd: MOVED (redirection not followed)" {
		t.Fatalf("redirects not grouped: %q", s[0])
	}
	if len(s) != maxErrorKinds+1 || s[len(s)-1] != "6× (other messages)" {
		t.Fatalf("kinds not bounded: %d %q", len(s), s[len(s)-1])
	}
	if !transient(errors.New("TRYAGAIN the shard has no leader")) || transient(errors.New("WRONGTYPE Operation")) {
		t.Fatalf("transient classification wrong")
	}
}
