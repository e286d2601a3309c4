package fsm

import (
	"bytes"
	"context"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raftstream/raftstream/engine"
)

// TestBackupIsLinearizableAndHoldsNoLock: while a writer increments the
// replicated counter (T.INCR), a backup's state holds every increment
// acknowledged before Backup was called and none that was not acknowledged
// by the time it returned; its Index is at least the log index of the
// last acknowledged one and its encoding decodes with engine.Restore. The
// shard keeps applying while the view is being written: a reader that
// never drains the encoding holds nothing up.
func TestBackupIsLinearizableAndHoldsNoLock(t *testing.T) {
	r := singleVoter(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var acked atomic.Int64    // highest counter value acknowledged
	var ackedAt atomic.Uint64 // its log index
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			f := r.Submit(incr)
			rs, err := f.Wait(ctx)
			if err != nil {
				t.Errorf("T.INCR: %v", err)
				return
			}
			n := int64(rs[0].(engine.Integer))
			acked.Store(n)
			ackedAt.Store(f.Index())
		}
	})
	defer func() { close(stop); wg.Wait() }()
	waitFor(t, 10*time.Second, "some increments", func() bool { return acked.Load() > 20 })

	for range 5 {
		before, beforeAt := acked.Load(), ackedAt.Load()
		b, err := r.Backup(ctx)
		if err != nil {
			t.Fatal(err)
		}
		after := acked.Load()
		var buf bytes.Buffer
		if _, err := b.Engine.WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		e, err := engine.Restore(&buf)
		if err != nil {
			t.Fatal(err)
		}
		got := int64(e.Config().NodeMaxEntries)
		// A writer's next increment may be applied, unacknowledged yet,
		// when the view is taken: at most one past what was acknowledged.
		if got < before || got > after+1 {
			t.Fatalf("backup holds counter %d: acknowledged %d before the call, %d after it", got, before, after)
		}
		if b.Index < beforeAt || b.Term == 0 || b.Now == 0 {
			t.Fatalf("backup at index %d term %d now %d; the last increment acknowledged before it is at %d", b.Index, b.Term, b.Now, beforeAt)
		}
	}

	// An encoding nobody reads holds no lock: the shard keeps applying.
	b, err := r.Backup(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() { _, err := b.Engine.WriteTo(pw); done <- err }()
	n := acked.Load()
	waitFor(t, 10*time.Second, "increments while a backup is being written", func() bool { return acked.Load() > n+20 })
	pr.CloseWithError(io.ErrClosedPipe)
	if err := <-done; err == nil {
		t.Fatal("WriteTo into a closed pipe succeeded")
	}
}

// TestBackupNeedsTheLeader: a follower refuses with NotLeaderError.
func TestBackupNeedsTheLeader(t *testing.T) {
	rs := clusterOf3(t)
	l := leaderOf(t, rs)
	apply(t, l.Shard, incr)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := followerOf(rs, l).Backup(ctx); !isNotLeader(err) {
		t.Fatalf("backup on a follower: %v, want NotLeaderError", err)
	}
	b, err := l.Backup(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if b.Index == 0 {
		t.Fatal("backup on the leader has index 0")
	}
}
