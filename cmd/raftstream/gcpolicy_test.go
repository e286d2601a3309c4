package main

import (
	"log/slog"
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
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

// TestGCPolicyHeapGoalIsThePercent: the runtime's heap goal under the
// policy's limit is the live heap plus the percent, not less: the runtime
// keeps a headroom of the limit back and counts the heap's unused span
// space against it, which the limit adds back.
func TestGCPolicyHeapGoalIsThePercent(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	defer func() { debug.SetGCPercent(100); debug.SetMemoryLimit(math.MaxInt64) }()
	live := make([][]byte, 64)
	for i := range live {
		live[i] = make([]byte, 1<<20) // 64 MiB live
	}
	stop := startGCPolicy(gcOptions{percent: 25, floor: 8 << 20}, slog.New(slog.DiscardHandler))
	defer stop()
	runtime.GC()
	time.Sleep(50 * time.Millisecond) // the finalizer runs after the cycle
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/heap/goal:bytes"}}
	metrics.Read(s)
	lv, goal := float64(s[0].Value.Uint64()), float64(s[1].Value.Uint64())
	if goal < 1.24*lv || goal > 1.30*lv {
		t.Fatalf("heap goal %.1f MiB for %.1f MiB live: %.3f×, want 1.25×", goal/(1<<20), lv/(1<<20), goal/lv)
	}
	runtime.KeepAlive(live)
}

// TestIdleTrimAfterABurst: once the process goes quiet after allocating a
// burst, the policy collects and returns the freed memory to the OS, once;
// not while allocation goes on, and not again while it stays quiet.
func TestIdleTrimAfterABurst(t *testing.T) {
	const period = 100 * time.Millisecond
	tu := &gcTuner{}
	done := make(chan struct{})
	defer close(done)
	go tu.trimWhenIdle(period, done)
	var sink []byte
	// Busy: well over idleAllocBytes per period, for 1 s. A period in
	// which this loop did not run at all (the test paused by a loaded
	// machine) does look idle, and a trim then is right: the busy phase
	// is run again, at most twice.
	for attempt := 1; ; attempt++ {
		before, longest := tu.trims.Load(), time.Duration(0)
		last := time.Now()
		for end := last.Add(time.Second); time.Now().Before(end); {
			for range 64 {
				sink = make([]byte, 64<<10)
			}
			time.Sleep(5 * time.Millisecond)
			now := time.Now()
			longest, last = max(longest, now.Sub(last)), now
		}
		n := tu.trims.Load() - before
		if n == 0 {
			break
		}
		if longest < period*8/10 || attempt == 3 {
			t.Fatalf("%d trims while allocating (longest pause between allocations %v), want none", n, longest)
		}
		t.Logf("%d trims while allocating, after a pause of %v between allocations: the loop again", n, longest)
	}
	base := tu.trims.Load()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	// Quiet.
	deadline := time.Now().Add(3 * time.Second)
	for tu.trims.Load() == base && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := tu.trims.Load() - base; n != 1 {
		t.Fatalf("%d trims after going quiet, want 1", n)
	}
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if after.NumGC <= before.NumGC || after.HeapReleased <= before.HeapReleased {
		t.Errorf("trim: GCs %d -> %d, HeapReleased %d -> %d; want a collection and memory released",
			before.NumGC, after.NumGC, before.HeapReleased, after.HeapReleased)
	}
	time.Sleep(500 * time.Millisecond)
	if n := tu.trims.Load() - base; n != 1 {
		t.Fatalf("%d trims while staying quiet, want still 1", n)
	}
	runtime.KeepAlive(sink)
}
