package main

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/raftstream/raftstream/jepsen/checker"
	"github.com/raftstream/raftstream/jepsen/history"
)

// hist builds a History by hand: each record is sent 10ns after the
// previous one and answered 5ns later, so records never overlap.
type hist struct {
	History
	now int64
}

func (b *hist) tick() (call, ret int64) {
	b.now += 10
	return b.now, b.now + 5
}

// xadd records an XADD of key to part, acknowledged with id ("" = unknown
// outcome).
func (b *hist) xadd(key OrderKey, part int32, id string) {
	x := XAdd{Key: key, Part: part, Acked: id != ""}
	if x.Acked {
		x.ID = history.MustID(id)
	}
	x.Call, x.Return = b.tick()
	b.XAdds = append(b.XAdds, x)
}

// read records a read of group on part; claimed for XAUTOCLAIM, else ">".
func (b *hist) read(group string, part int32, claimed bool, ds ...Delivery) {
	r := Read{Group: group, Part: part, Claimed: claimed, Entries: ds}
	r.Call, r.Return = b.tick()
	b.Reads = append(b.Reads, r)
}

// drain records every group's empty ">" read of every partition.
func (b *hist) drain() {
	for _, g := range b.Groups {
		for p := range b.Streams {
			b.read(g, int32(p), false)
		}
	}
}

func dl(key OrderKey, id string) Delivery { return Delivery{Key: key, ID: history.MustID(id)} }

// goodHistory is 3 orders over 2 partitions, each consumed once by both
// groups in stream order, then both groups drained.
func goodHistory() *hist {
	b := &hist{History: History{Streams: []string{"o:{0}", "o:{1}"}, Groups: []string{"billing", "analytics"}}}
	b.xadd(newOrderKey(0, 1), 0, "100-0")
	b.xadd(newOrderKey(0, 2), 1, "100-1")
	b.xadd(newOrderKey(1, 1), 0, "101-0")
	for _, g := range b.Groups {
		b.read(g, 0, false, dl(newOrderKey(0, 1), "100-0"))
		b.read(g, 1, false, dl(newOrderKey(0, 2), "100-1"))
		b.read(g, 0, false, dl(newOrderKey(1, 1), "101-0"))
	}
	return b
}

// without drops group's reads that delivered key.
func (b *hist) without(group string, key OrderKey) {
	var rs []Read
	for _, r := range b.Reads {
		if r.Group != group || len(r.Entries) != 1 || r.Entries[0].Key != key {
			rs = append(rs, r)
		}
	}
	b.Reads = rs
}

func check(v Verdict, name string) Check {
	for _, c := range v.Checks {
		if c.Name == name {
			return c
		}
	}
	return Check{}
}

func TestVerifyCleanHistory(t *testing.T) {
	b := goodHistory()
	b.drain()
	v := Verify(b.History)
	if !v.OK || v.Acked != 3 || len(v.Checks) != 3 {
		t.Fatalf("clean history rejected: %+v", v)
	}
	for _, g := range v.Groups {
		if g.Unique != 3 || g.Deliveries != 3 || g.Duplicates != 0 {
			t.Fatalf("group %s: %+v", g.Group, g)
		}
	}
}

func TestVerifyFlagsMissingAck(t *testing.T) {
	b := goodHistory()
	b.without("analytics", newOrderKey(1, 1)) // order 1-1 never delivered to analytics
	b.drain()
	v := Verify(b.History)
	g := check(v, "groups")
	if v.OK || g.Valid != checker.Illegal || g.Kinds["never-delivered"] != 1 || len(g.Examples) != 1 ||
		!strings.Contains(g.Examples[0], "group analytics") || !strings.Contains(g.Examples[0], `"1-1"`) {
		t.Fatalf("missing delivery not flagged: %+v", v)
	}
	if v.Groups[0].Unique != 3 || v.Groups[1].Unique != 2 {
		t.Fatalf("group stats: %+v", v.Groups)
	}
}

func TestVerifyReportsDuplicatesSeparately(t *testing.T) {
	b := goodHistory()
	b.drain()
	// Redeliveries through XAUTOCLAIM (at-least-once): allowed, but counted.
	b.read("billing", 1, true, dl(newOrderKey(0, 2), "100-1"))
	b.read("billing", 1, true, dl(newOrderKey(0, 2), "100-1"))
	v := Verify(b.History)
	if g := v.Groups[0]; !v.OK || g.Duplicates != 2 || g.Unique != 3 || g.Deliveries != 5 {
		t.Fatalf("duplicate accounting: %+v", v)
	}
}

func TestVerifyFlagsStrayAndOutOfOrder(t *testing.T) {
	b := goodHistory()
	// An order consumed with a different entry ID: a second copy was written.
	b.read("billing", 0, false, dl(newOrderKey(1, 1), "200-0"))
	// A phantom order never produced, and an order delivered from the wrong
	// partition.
	stray := len(b.Reads)
	b.read("billing", 1, false, dl(newOrderKey(9, 9), "300-0"))
	b.read("billing", 1, true, dl(newOrderKey(0, 1), "100-0"))
	b.drain()
	v := Verify(b.History)
	if ids := check(v, "ids"); v.OK || ids.Kinds["phantom"] != 2 || ids.Kinds["id-mismatch"] != 1 {
		t.Fatalf("stray deliveries not flagged: %+v", v)
	}
	// A client that retries writes may legitimately store an order twice.
	b.ClientRetries = true
	b.Reads = append(b.Reads[:stray], b.Reads[stray+2:]...)
	if v := Verify(b.History); !v.OK {
		t.Fatalf("duplicate write with client retries: %+v", v)
	}

	b = goodHistory()
	r := b.Reads[3:6] // analytics: partition 0 delivered 101-0 before 100-0
	r[0].Entries, r[2].Entries = r[2].Entries, r[0].Entries
	b.drain()
	v = Verify(b.History)
	if g := check(v, "groups"); v.OK || g.Kinds["position-regression"] != 1 {
		t.Fatalf("out-of-order delivery not flagged: %+v", v)
	}
}

func TestVerifyUnknownOutcomeAndTrimming(t *testing.T) {
	b := goodHistory()
	// Produces whose reply was lost; one was written and is delivered: fine.
	b.xadd(newOrderKey(2, 1), 1, "")
	b.xadd(newOrderKey(2, 2), 1, "")
	b.read("billing", 1, false, dl(newOrderKey(2, 1), "400-0"))
	// MAXLEN trimmed partition 0 up to 101-0 before analytics read 100-0.
	b.without("analytics", newOrderKey(0, 1))
	b.drain()
	b.Final = map[int32][]Delivery{0: {dl(newOrderKey(1, 1), "101-0")},
		1: {dl(newOrderKey(0, 2), "100-1"), dl(newOrderKey(2, 1), "400-0")}}
	b.FinalAt = b.now + 10
	v := Verify(b.History)
	if !v.OK || v.Unknown != 2 || len(v.Checks) != 4 || v.Groups[0].Unique != 4 || v.Groups[1].Unique != 2 {
		t.Fatalf("unknown/trimmed accounting: %+v", v)
	}
	// Without the stream's final contents the same gap is a missing entry.
	b.Final = nil
	if v := Verify(b.History); v.OK || check(v, "groups").Kinds["never-delivered"] != 1 {
		t.Fatalf("gap without MAXLEN must be missing: %+v", v)
	}
	// An acknowledged order gone from the stream, above what was trimmed, is lost.
	b.Final = map[int32][]Delivery{0: {dl(newOrderKey(0, 1), "100-0")},
		1: {dl(newOrderKey(0, 2), "100-1"), dl(newOrderKey(2, 1), "400-0")}}
	if v := Verify(b.History); v.OK || check(v, "lost").Kinds["lost"] != 1 {
		t.Fatalf("lost entry not flagged: %+v", v)
	}
}

// TestVerifyUndrainedGroupFails: without a read showing a group drained,
// nothing proves its missing orders will not come; that fails the run.
func TestVerifyUndrainedGroupFails(t *testing.T) {
	b := goodHistory()
	v := Verify(b.History)
	if g := check(v, "groups"); v.OK || g.Valid != checker.Unknown || len(g.Examples) == 0 {
		t.Fatalf("undrained groups accepted: %+v", v)
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
