package cluster

import (
	"encoding/json"
	"testing"
	"time"
)

func TestHealthDownAfterMissesAndHysteresis(t *testing.T) {
	h := newHealth(nil)
	t0 := time.Unix(1000, 0)
	h.record([]pollResult{{id: "a", ok: true, leads: []int{1, 2}}, {id: "b", ok: true, leads: []int{3}}}, t0)
	if !h.up("a") || h.leaderOf(1) != "a" || h.leaderOf(3) != "b" || h.leaderOf(4) != "" {
		t.Fatal("first round not recorded")
	}
	// a stops leading 2; b takes it.
	h.record([]pollResult{{id: "a", ok: true, leads: []int{1}}, {id: "b", ok: true, leads: []int{2, 3}}}, t0.Add(time.Second))
	if h.leaderOf(2) != "b" || h.leaderOf(1) != "a" {
		t.Fatalf("leaders not updated: 1=%q 2=%q", h.leaderOf(1), h.leaderOf(2))
	}
	// One miss: still up, but its reports are no longer fresh (a client is
	// not sent to it as leader) and hysteresis restarts (upFor 0).
	h.record([]pollResult{{id: "a", ok: false}}, t0.Add(2*time.Second))
	if !h.up("a") || h.leaderOf(1) != "" || h.upFor("a") != 0 {
		t.Fatalf("after one miss: up=%v leader=%q upFor=%v", h.up("a"), h.leaderOf(1), h.upFor("a"))
	}
	// Answering again restarts the up-since clock.
	now := time.Now()
	h.record([]pollResult{{id: "a", ok: true, leads: []int{1}}}, now)
	if d := h.upFor("a"); d <= 0 || d > time.Minute || h.leaderOf(1) != "a" {
		t.Fatalf("upFor after recovery = %v, leader %q", d, h.leaderOf(1))
	}
	// downAfter misses in a row: down, its leaderships forgotten.
	for i := 0; i < downAfter; i++ {
		h.record([]pollResult{{id: "a", ok: false}}, now)
	}
	if h.up("a") || h.leaderOf(1) != "" || h.upFor("a") != 0 || h.downFor("a") <= 0 {
		t.Fatal("member not marked down after repeated misses")
	}
	if !h.up("b") || h.leaderOf(2) != "b" {
		t.Fatal("other member affected")
	}
}

// Gossip feeds health: a member memberlist sees is up with the
// leaderships its metadata carries (the highest term wins a stale claim);
// one that disappears from the view is down, its claims gone; one gossip
// never saw is left to polls.
func TestHealthFromGossip(t *testing.T) {
	n := &Node{id: "self"}
	h := newHealth(n)
	members := []Member{{ID: "self"}, {ID: "a"}, {ID: "b"}, {ID: "c"}}
	now := time.Now()
	view := map[string]gossipView{
		"a": {id: "a", meta: gossipMeta{Leads: []uint64{1, 5, 2, 5}, Hosted: 3, Ctrl: 7}},
		"b": {id: "b", meta: gossipMeta{Leads: []uint64{1, 4}, Hosted: 2, Ctrl: 9}},
	}
	h.recordGossip(members, view, now)
	if !h.up("a") || !h.up("b") || h.up("c") || h.leaderOf(1) != "a" || h.leaderOf(2) != "a" {
		t.Fatalf("up a=%v b=%v c=%v, leaders 1=%q 2=%q", h.up("a"), h.up("b"), h.up("c"), h.leaderOf(1), h.leaderOf(2))
	}
	if got := h.pollTargets(members); len(got) != 1 || got[0].ID != "c" {
		t.Fatalf("poll targets %v, want only c (gossip never saw it)", got)
	}
	if id, e := h.newestCtrl(8); id != "b" || e != 9 {
		t.Fatalf("newest controller Membership: %q %d", id, e)
	}
	if hosted, up := h.hostedBy("a"); hosted != 3 || !up {
		t.Fatalf("hostedBy a = %d %v", hosted, up)
	}
	// a gone from the view (dead or left): down, never polled.
	delete(view, "a")
	h.recordGossip(members, view, now.Add(2*time.Second))
	if h.up("a") || h.leaderOf(1) != "b" || h.leaderOf(2) != "" {
		t.Fatalf("dead: up=%v leaders 1=%q 2=%q", h.up("a"), h.leaderOf(1), h.leaderOf(2))
	}
	if got := h.pollTargets(members); len(got) != 1 || got[0].ID != "c" {
		t.Fatalf("poll targets %v, want only c", got)
	}
	// Metadata too large for its leaderships: polled, leaderships kept from
	// the polls.
	view["b"] = gossipView{id: "b", meta: gossipMeta{Partial: true}}
	h.recordGossip(members, view, now.Add(3*time.Second))
	if got := h.pollTargets(members); len(got) != 2 {
		t.Fatalf("poll targets %v, want b and c", got)
	}
}

// Metadata that does not fit leaves the leaderships out and says so.
func TestGossipMetaFitsTheLimit(t *testing.T) {
	m := gossipMeta{RESP: "10.0.0.1:6379", Bus: "10.0.0.1:16379", Ctrl: 12, Hosted: 64}
	for i := 0; i < 64; i++ {
		m.Leads = append(m.Leads, uint64(i), 123456)
	}
	b := m.encode(512)
	if len(b) > 512 {
		t.Fatalf("%d bytes", len(b))
	}
	var got gossipMeta
	if err := json.Unmarshal(b, &got); err != nil || !got.Partial || got.Leads != nil || got.Hosted != 64 {
		t.Fatalf("got %+v, %v", got, err)
	}
	m.Leads = m.Leads[:10]
	got = gossipMeta{}
	if b := m.encode(512); json.Unmarshal(b, &got) != nil || got.Partial || len(got.leads()) != 5 {
		t.Fatalf("small metadata: %s", b)
	}
}
