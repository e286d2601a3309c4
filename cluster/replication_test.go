package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/raftstream/raftstream/fsm"
)

// TestReplicationTrackerCounts checks the tracker's bookkeeping: the
// highest acknowledged index per follower, monotone within a term,
// forgotten when a newer term begins, and acknowledgements of older terms
// ignored; index 0 counts the followers heard from lately.
func TestReplicationTrackerCounts(t *testing.T) {
	const live = time.Minute
	r := newReplication(live)
	peers := []raft.ServerID{"a", "b"}
	count := func(term, index uint64) int {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.count(term, peers, index, time.Now())
	}
	if n := count(1, 0); n != 0 {
		t.Fatalf("nothing acknowledged yet, count %d", n)
	}
	r.ack("a", 1, 0) // a heartbeat: connected, holds nothing we know of
	r.ack("b", 1, 7)
	if n := count(1, 0); n != 2 {
		t.Fatalf("both heard from, count(0) = %d", n)
	}
	if n := count(1, 5); n != 1 {
		t.Fatalf("count(5) = %d, want 1 (b)", n)
	}
	r.ack("b", 1, 3) // a heartbeat or a late response: never goes back
	r.ack("a", 1, 9)
	if n := count(1, 7); n != 2 {
		t.Fatalf("count(7) = %d, want 2", n)
	}
	// Followers silent for longer than live are no longer connected, but
	// still hold what they stored.
	r.mu.Lock()
	later := time.Now().Add(2 * live)
	connected, holding := r.count(1, peers, 0, later), r.count(1, peers, 7, later)
	r.mu.Unlock()
	if connected != 0 || holding != 2 {
		t.Fatalf("after silence: connected %d (want 0), holding index 7 %d (want 2)", connected, holding)
	}
	r.ack("x", 1, 100) // not a server of the configuration asked about
	if n := count(1, 10); n != 0 {
		t.Fatalf("count(10) = %d, want 0", n)
	}
	if n := count(2, 0); n != 0 {
		t.Fatalf("a newer term the tracker has not seen yet counts %d", n)
	}
	r.ack("a", 2, 4) // a new leadership starts from nothing
	if n := count(2, 5); n != 0 {
		t.Fatalf("term 2 count(5) = %d, want 0", n)
	}
	r.ack("b", 1, 50) // a response to a request of the old term
	if n := count(2, 0); n != 1 {
		t.Fatalf("term 2 count(0) = %d, want 1 (a)", n)
	}
}

// TestWaitReplicasSeesFollowersStore runs three in-process nodes with one
// shard: a write's index is soon held by both followers; with one follower
// gone the next write's index is held by one, and WaitReplicas waits out
// its context for a second; a follower answers at once that it does not
// lead; a waiter already satisfied does not wait.
func TestWaitReplicasSeesFollowersStore(t *testing.T) {
	// No balancer: the leader found below must stay the leader.
	tc := startCluster(t, 3, 1, func(c *Config) { c.BalanceInterval = time.Hour })
	ctx, cancel := context.WithTimeout(context.Background(), workBudget)
	defer cancel()
	var leader *Node
	var followers []int
	for i, n := range tc.nodes {
		if st, ok := n.ShardStatus(0); ok && st.Role == "leader" {
			leader = n
		} else {
			followers = append(followers, i)
		}
	}
	if leader == nil || len(followers) != 2 {
		t.Fatalf("leader %v, followers %v", leader, followers)
	}
	write := func() uint64 {
		t.Helper()
		f := leader.Submit(0, fsm.Unit{{[]byte("XADD"), []byte("s"), []byte("*"), []byte("f"), []byte("v")}})
		if _, err := f.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		if f.Index() == 0 {
			t.Fatal("an applied write reports index 0")
		}
		return f.Index()
	}

	idx := write()
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	t0 := time.Now()
	n, leading := leader.WaitReplicas(wctx, 0, idx, 2)
	wcancel()
	if n != 2 || !leading {
		t.Fatalf("WaitReplicas(%d, 2) = %d %v after %v, want 2 true", idx, n, leading, time.Since(t0))
	}
	t.Logf("both followers held index %d after %v", idx, time.Since(t0))

	// Already satisfied: no wait, even with a context that has ended.
	done, stop := context.WithCancel(ctx)
	stop()
	if n, _ := leader.WaitReplicas(done, 0, idx, 2); n != 2 {
		t.Fatalf("already satisfied: %d, want 2", n)
	}
	if n, leading := tc.nodes[followers[0]].WaitReplicas(ctx, 0, idx, 2); n != 0 || leading {
		t.Fatalf("a follower answered %d %v, want 0 false", n, leading)
	}

	tc.nodes[followers[0]].Close()
	tc.nodes[followers[0]] = nil
	idx = write()
	const wait = 500 * time.Millisecond
	t0 = time.Now() // before the deadline is set, so took cannot fall short of wait
	wctx, wcancel = context.WithTimeout(ctx, wait)
	n, leading = leader.WaitReplicas(wctx, 0, idx, 2)
	took := time.Since(t0)
	wcancel()
	if n != 1 || !leading || took < wait {
		t.Fatalf("one follower down: WaitReplicas = %d %v after %v, want 1 true after %v", n, leading, took, wait)
	}
	// The stopped follower stops counting as connected (index 0) once it
	// has been silent for an election timeout (1 s here).
	t0 = time.Now()
	for {
		n, _ := leader.WaitReplicas(ctx, 0, 0, 0)
		if n == 1 {
			break
		}
		if time.Since(t0) > 10*time.Second {
			t.Fatalf("connected followers: %d after %v, want 1", n, time.Since(t0))
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("the stopped follower stopped counting as connected %v after the wait", time.Since(t0).Round(time.Millisecond))
}
