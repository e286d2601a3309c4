package fsm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/raftstream/raftstream/engine"
)

// TestLogStoreFaultStopsReplicaAndLosesNoAck: writers load the leader of a
// 3-replica group (real raft over TCP, real bbolt files) when its log store
// starts failing writes with an fsync error. No write is acknowledged after
// a writer's first error; the faulted replica reports the fault (StorageFault,
// Stats), stops (it refuses further commands with StorageFaultError and
// never leads again); another replica takes over with every acknowledged
// write and keeps serving.
func TestLogStoreFaultStopsReplicaAndLosesNoAck(t *testing.T) {
	rs := clusterOf3(t)
	old := leaderOf(t, rs)
	fs := old.store.(*faultStore)

	var (
		mu       sync.Mutex
		outcomes = map[string]int{}
		acked    = map[string]string{} // entry ID → field
		okAfter  int
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			failed, errs := false, 0
			for i := 0; i < 5000; i++ {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				field := fmt.Sprintf("w%d-%d", w, i)
				res, err := old.Submit(unit(cmd("XADD", "s", "*", "f", field))).Wait(ctx)
				cancel()
				mu.Lock()
				var sf *StorageFaultError
				switch {
				case err == nil:
					acked[string(res[0].(engine.BulkString))] = field
					outcomes["ok"]++
					if failed {
						okAfter++
					}
				case errors.As(err, &sf):
					outcomes["storage fault"]++
				case errors.Is(err, ErrUnknownOutcome):
					outcomes["unknown"]++
				case isNotLeader(err):
					outcomes["not leader"]++
				default:
					t.Errorf("unexpected error %v", err)
				}
				mu.Unlock()
				if err != nil {
					if errs++; errs >= 20 {
						return
					}
					failed = true
				}
			}
		}()
	}
	waitFor(t, 20*time.Second, "acknowledged writes", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return outcomes["ok"] >= 300
	})
	fs.injectNow.Store(true)
	waitFor(t, 20*time.Second, "the fault to be reported", func() bool { return old.StorageFault() != nil })
	wg.Wait() // each writer ends after 20 errors
	close(stop)

	mu.Lock()
	t.Logf("outcomes %v", outcomes)
	if okAfter > 0 {
		t.Errorf("%d writes acknowledged after their writer's first error", okAfter)
	}
	if outcomes["storage fault"] == 0 {
		t.Errorf("no write was refused with StorageFaultError: %v", outcomes)
	}
	mu.Unlock()

	// The faulted replica reports and keeps refusing.
	if st := old.Stats().StorageFault; !strings.Contains(st, "input/output error") || !strings.Contains(st, "Raft log store failed") {
		t.Errorf("Stats().StorageFault = %q", st)
	}
	_, err := old.Submit(unit(cmd("XADD", "s", "*", "f", "late"))).Wait(context.Background())
	if !errors.Is(err, ErrStorageFault) {
		t.Errorf("submit after the fault: %v, want ErrStorageFault", err)
	}
	if err := old.Read(context.Background(), func(*engine.Engine) {}); !errors.Is(err, ErrStorageFault) {
		t.Errorf("read after the fault: %v, want ErrStorageFault", err)
	}
	// Its raft instance is shut down (Status may still say follower:
	// raft's leader loop sets that state after the failed write).
	waitFor(t, 10*time.Second, "the faulted replica's raft to stop", func() bool {
		return errors.Is(old.Raft().Apply(nil, 100*time.Millisecond).Error(), raft.ErrRaftShutdown)
	})

	var rest []*replica
	for _, r := range rs {
		if r != old {
			rest = append(rest, r)
		}
	}
	nl := leaderOf(t, rest)
	var entries engine.Reply
	if err := nl.Read(context.Background(), func(e *engine.Engine) { entries = e.Exec(0, cmd("XRANGE", "s", "-", "+")) }); err != nil {
		t.Fatal(err)
	}
	have := map[string]string{}
	for _, r := range entries.(engine.Array) {
		e := r.(engine.Array)
		have[string(e[0].(engine.BulkString))] = string(e[1].(engine.Array)[1].(engine.BulkString))
	}
	for id, field := range acked {
		if have[id] != field {
			t.Fatalf("acknowledged XADD %s (%s) missing on the new leader %s (has %q)", id, field, nl.id, have[id])
		}
	}
	t.Logf("%d acknowledged, %d entries on the new leader %s", len(acked), len(have), nl.id)
	if rs := apply(t, nl.Shard, unit(cmd("XADD", "s", "*", "f", "after"))); rs[0].(engine.BulkString) == nil {
		t.Fatalf("new leader: %v", rs)
	}
	if old.IsLeader() || old.StorageFault() == nil {
		t.Error("the faulted replica leads again or forgot its fault")
	}
}
