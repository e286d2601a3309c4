package cluster

import (
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
	// One miss: still up, leaders kept, but hysteresis restarts (upFor 0).
	h.record([]pollResult{{id: "a", ok: false}}, t0.Add(2*time.Second))
	if !h.up("a") || h.leaderOf(1) != "a" || h.upFor("a") != 0 {
		t.Fatalf("after one miss: up=%v leader=%q upFor=%v", h.up("a"), h.leaderOf(1), h.upFor("a"))
	}
	// Answering again restarts the up-since clock.
	now := time.Now()
	h.record([]pollResult{{id: "a", ok: true, leads: []int{1}}}, now)
	if d := h.upFor("a"); d <= 0 || d > time.Minute {
		t.Fatalf("upFor after recovery = %v", d)
	}
	// downAfter misses in a row: down, its leaderships forgotten.
	for i := 0; i < downAfter; i++ {
		h.record([]pollResult{{id: "a", ok: false}}, now)
	}
	if h.up("a") || h.leaderOf(1) != "" || h.upFor("a") != 0 {
		t.Fatal("member not marked down after repeated misses")
	}
	if !h.up("b") || h.leaderOf(2) != "b" {
		t.Fatal("other member affected")
	}
}
