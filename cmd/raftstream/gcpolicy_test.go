package main

import (
	"log/slog"
	"math"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

func TestSizeFlag(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "123": 123, "64mb": 64 << 20, "64MiB": 64 << 20, "2g": 2e9, "1GB": 1 << 30, "10k": 1e4, "3kib": 3 << 10} {
		var s sizeFlag
		if err := s.Set(in); err != nil || int64(s) != want {
			t.Errorf("%q = %d, %v; want %d", in, s, err, want)
		}
	}
	for _, in := range []string{"", "x", "-1mb", "99999999999gb"} {
		var s sizeFlag
		if err := s.Set(in); err == nil {
			t.Errorf("%q accepted as %d", in, s)
		}
	}
}

// TestGCPolicyFollowsTheLiveHeap: after a collection the memory limit is
// the live heap plus the percent (and the runtime's own memory), never
// below the floor and never above the ceiling.
func TestGCPolicyFollowsTheLiveHeap(t *testing.T) {
	t.Setenv("GOGC", "") // empty is unset, for the runtime and the policy
	t.Setenv("GOMEMLIMIT", "")
	defer func() { debug.SetGCPercent(100); debug.SetMemoryLimit(math.MaxInt64) }()
	live := make([][]byte, 64)
	for i := range live {
		live[i] = make([]byte, 1<<20) // 64 MiB live
	}
	check := func(o gcOptions, lo, hi int64) {
		t.Helper()
		stop := startGCPolicy(o, slog.New(slog.DiscardHandler))
		defer stop()
		runtime.GC()
		time.Sleep(50 * time.Millisecond) // the finalizer runs after the cycle
		got := debug.SetMemoryLimit(-1)
		if got < lo || got > hi {
			t.Fatalf("%+v: limit %d MiB, want %d..%d MiB", o, got>>20, lo>>20, hi>>20)
		}
	}
	check(gcOptions{percent: 25, floor: 8 << 20}, 80<<20, 96<<20)
	check(gcOptions{percent: 25, floor: 200 << 20}, 200<<20, 200<<20)
	check(gcOptions{percent: 25, floor: 8 << 20, limit: 70 << 20}, 70<<20, 70<<20)

	// One policy across many collections: it re-arms after each, so the
	// limit follows the live heap down and up again.
	stop := startGCPolicy(gcOptions{percent: 25, floor: 8 << 20}, slog.New(slog.DiscardHandler))
	defer stop()
	limitAfterGC := func() int64 {
		runtime.GC()
		time.Sleep(50 * time.Millisecond)
		return debug.SetMemoryLimit(-1)
	}
	for round := 0; round < 3; round++ {
		clear(live[16:])
		live = live[:16] // 16 MiB live
		if got := limitAfterGC(); got < 20<<20 || got > 32<<20 {
			t.Fatalf("round %d, 16 MiB live: limit %d MiB, want 20..32", round, got>>20)
		}
		for len(live) < 64 {
			live = append(live, make([]byte, 1<<20))
		}
		if got := limitAfterGC(); got < 80<<20 || got > 96<<20 {
			t.Fatalf("round %d, 64 MiB live: limit %d MiB, want 80..96", round, got>>20)
		}
	}
	runtime.KeepAlive(live)
}
