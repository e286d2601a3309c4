package fsm

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestGatherWaitsForTheAnsweredSubmitter: with a slow disk, B is queued
// while A's entry is written, and A's submitter sends C as soon as A is
// answered. The batcher, once A applied, waits for A's submitter to come
// back, so B and C share one entry. Without the gather, B's entry forms at
// once and C usually waits for a third.
func TestGatherWaitsForTheAnsweredSubmitter(t *testing.T) {
	for _, tc := range []struct {
		gather time.Duration
		want   uint64 // entries for A, B and C; 0 = only logged
	}{{10 * time.Second, 2}, {0, 0}} {
		s := singleVoter(t, func(c *Config) { c.MaxGather = tc.gather })
		if _, err := s.Submit(incr).Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
		storeDelay.Store(int64(400 * time.Millisecond))
		before, begun := s.Raft().LastIndex(), s.logs.begun.Load()
		fa := s.Submit(incr)
		waitFor(t, 10*time.Second, "A's write to begin", func() bool { return s.logs.begun.Load() > begun })
		fb := s.Submit(incr)
		if _, err := fa.Wait(context.Background()); err != nil {
			storeDelay.Store(0)
			t.Fatal(err)
		}
		fc := s.Submit(incr)
		for i, f := range []*Future{fb, fc} {
			if _, err := f.Wait(context.Background()); err != nil {
				storeDelay.Store(0)
				t.Fatalf("command %c: %v", 'B'+i, err)
			}
		}
		storeDelay.Store(0)
		checkEntries(t, s, before, fmt.Sprintf("MaxGather %v", tc.gather), tc.want)
		s.close(t)
	}
}

// TestGatherWaitIsBoundedByTheCommit: the gather waits at most as long as
// the entry in flight took to commit, and at most MaxGather; before any
// entry has committed it does not wait.
func TestGatherWaitIsBoundedByTheCommit(t *testing.T) {
	for _, tc := range []struct {
		commit, max, want time.Duration
	}{
		{3 * time.Millisecond, DefaultConfig().MaxGather, 3 * time.Millisecond},
		{700 * time.Microsecond, 4 * time.Millisecond, 700 * time.Microsecond},
		{30 * time.Millisecond, 4 * time.Millisecond, 4 * time.Millisecond},
		{3 * time.Millisecond, 0, 0},
		{0, 4 * time.Millisecond, 0},
	} {
		var s Shard
		s.cfg.MaxGather = tc.max
		s.lastCommit.Store(int64(tc.commit))
		if got := s.gatherWait(); got != tc.want {
			t.Errorf("commit %v, MaxGather %v: gather waits %v, want %v", tc.commit, tc.max, got, tc.want)
		}
	}
}

// TestGatherEnds: gather returns once the batch holds want proposals, when
// its wait is over, on stop, and at a proposal that does not fit (which it
// hands back, out of the batch).
func TestGatherEnds(t *testing.T) {
	p := func(args ...string) *proposal { return &proposal{fut: newFuture(), unit: unit(cmd(args...))} }
	newForming := func() *forming {
		f := &forming{maxCmds: 3, maxBytes: 100}
		f.add(p("T.INCR"))
		return f
	}

	t.Run("want", func(t *testing.T) {
		q := make(chan *proposal, 4)
		f := newForming()
		go func() {
			time.Sleep(20 * time.Millisecond)
			q <- p("T.INCR")
			time.Sleep(20 * time.Millisecond)
			q <- p("T.INCR")
		}()
		start := time.Now()
		if carry := f.gather(q, 3, 10*time.Second, nil); carry != nil || len(f.batch) != 3 || f.cmds != 3 {
			t.Fatalf("carry %v, batch of %d (%d commands), want 3", carry, len(f.batch), f.cmds)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("returned after %v, not when the batch held 3", d)
		}
	})
	t.Run("wait", func(t *testing.T) {
		q := make(chan *proposal, 4)
		f := newForming()
		q <- p("T.INCR")
		start := time.Now()
		if carry := f.gather(q, 5, 50*time.Millisecond, nil); carry != nil || len(f.batch) != 2 {
			t.Fatalf("carry %v, batch of %d, want 2", carry, len(f.batch))
		}
		if d := time.Since(start); d < 50*time.Millisecond {
			t.Fatalf("returned after %v, before its wait of 50ms", d)
		}
		if carry := f.gather(q, 5, 0, nil); carry != nil || len(f.batch) != 2 {
			t.Fatalf("no wait: carry %v, batch of %d, want 2", carry, len(f.batch))
		}
	})
	t.Run("stop", func(t *testing.T) {
		stop := make(chan struct{})
		close(stop)
		f := newForming()
		if carry := f.gather(make(chan *proposal), 5, 10*time.Second, stop); carry != nil || len(f.batch) != 1 {
			t.Fatalf("carry %v, batch of %d, want 1", carry, len(f.batch))
		}
	})
	t.Run("limits", func(t *testing.T) {
		q := make(chan *proposal, 4)
		f := newForming()
		big := &proposal{fut: newFuture(), unit: unit(cmd("T.INCR"), cmd("T.INCR"), cmd("T.INCR"))}
		q <- big
		if carry := f.gather(q, 5, 10*time.Second, nil); carry != big || len(f.batch) != 1 {
			t.Fatalf("carry %v, batch of %d: want the 3-command unit handed back, batch of 1", carry, len(f.batch))
		}
		f = newForming()
		fat := p("T.SET", string(make([]byte, 100)))
		q <- fat
		if carry := f.gather(q, 5, 10*time.Second, nil); carry != fat {
			t.Fatalf("carry %v, want the unit over MaxBatchBytes handed back", carry)
		}
		// An empty batch takes any unit: a unit is never split.
		f = &forming{maxCmds: 1, maxBytes: 1}
		if !f.add(big) || len(f.batch) != 1 {
			t.Fatal("an empty batch refused a unit over its limits")
		}
	})
}
