package cluster

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// voterCount counts the shards whose Raft configuration, as seen by the
// shard's leader in tc, lists id as a voter.
func voterCount(tc *testCluster, id string) (voters, leads int) {
	for _, n := range tc.nodes {
		if n == nil {
			continue
		}
		for i := 0; i < n.NumShards(); i++ {
			ls := n.shard(i)
			if ls == nil || !ls.s.IsLeader() {
				continue
			}
			if n.ID() == id {
				leads++
			}
			f := ls.s.Raft().GetConfiguration()
			if f.Error() != nil {
				continue
			}
			if slices.ContainsFunc(f.Configuration().Servers, func(s raft.Server) bool {
				return string(s.ID) == id && s.Suffrage == raft.Voter
			}) {
				voters++
			}
		}
	}
	return voters, leads
}

// TestJoinRunningClusterThenDrain adds a fourth node to a running 3-node,
// 16-shard cluster while a writer runs on every shard, waits until it holds
// its share of replicas (16×3/4 = 12) and leads shards, then removes it
// again: its replicas move back and it leaves the Membership. Every
// acknowledged write survives (per shard, the value read back is at least
// the last one acknowledged: values only increase).
func TestJoinRunningClusterThenDrain(t *testing.T) {
	tc := startCluster(t, 3, 16)
	waitControllers(t, tc, 20*time.Second)
	c := testConfig(t, t.TempDir())
	c.Shards = 0
	c.Join = tc.cfgs[0].Join
	loadedTiming(&c)
	c.BalanceInterval = 300 * time.Millisecond
	c.NodeName = "n3"
	nn, err := Open(c)
	if err != nil {
		t.Fatal(err)
	}
	tc.nodes = append(tc.nodes, nn)

	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	var acked [16]atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var writeErr atomic.Value
	var stopOnce sync.Once
	halt := func() { stopOnce.Do(func() { close(stop) }); wg.Wait() }
	// The writer reads tc.nodes: end it before the cleanup closes them,
	// also when the test fails early.
	defer halt()
	wg.Add(1)
	go func() {
		defer wg.Done()
		for v := 1; ; v++ {
			for s := 0; s < 16; s++ {
				select {
				case <-stop:
					return
				default:
				}
				wctx, wcancel := context.WithTimeout(ctx, 20*time.Second)
				err := tc.submitFollowing(wctx, s, v)
				wcancel()
				if err != nil {
					writeErr.Store(err)
					return
				}
				acked[s].Store(int64(v))
			}
		}
	}()

	t0 := time.Now()
	sctx, scancel := context.WithTimeout(ctx, 30*time.Second)
	if err := nn.Start(sctx); err != nil {
		t.Fatal(err)
	}
	scancel()
	t.Logf("joined in %v", time.Since(t0))
	// Converged: the new node holds 12 replicas and leads some shards, the
	// old ones hold 12±1 each.
	deadline := time.Now().Add(60 * time.Second)
	for {
		v, l := voterCount(tc, nn.ID())
		ok := v >= 12 && l >= 3
		var others []int
		for _, n := range tc.nodes[:3] {
			ov, _ := voterCount(tc, n.ID())
			others = append(others, ov)
			ok = ok && ov >= 11 && ov <= 13
		}
		if ok {
			t.Logf("new node voter on %d shards, leads %d, %v after start (others: %v voters)", v, l, time.Since(t0), others)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 60s the new node is a voter on %d shards and leads %d; others voters on %v", v, l, others)
		}
		time.Sleep(100 * time.Millisecond)
	}

	t1 := time.Now()
	if err := tc.nodes[0].RemoveNode(ctx, nn.ID()); err != nil {
		t.Fatal(err)
	}
	t.Logf("removed in %v", time.Since(t1))
	// Counted from every replica that believes it leads: a removed leader
	// keeps its old configuration until its lease runs out and it steps
	// down, so give that a bounded moment.
	for deadline := time.Now().Add(10 * time.Second); ; {
		v, _ := voterCount(tc, nn.ID())
		if v == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("removed node still a voter on %d shards 10s after removal", v)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, n := range tc.nodes[:3] {
		if _, ok := n.st.Load().members.Node(nn.ID()); ok {
			// Adoption reaches every node within a poll or two.
			time.Sleep(2 * time.Second)
			if _, ok := n.st.Load().members.Node(nn.ID()); ok {
				t.Errorf("node %s still lists the removed node", n.ID())
			}
		}
	}
	halt()
	if e := writeErr.Load(); e != nil {
		t.Fatalf("writer: %v", e)
	}
	for s := 0; s < 16; s++ {
		want := int(acked[s].Load())
		var got int
		err := errors.New("no leader")
		for try := 0; try < 100 && err != nil; try++ {
			for _, n := range tc.nodes[:3] {
				if st, ok := n.ShardStatus(s); ok && st.Role == "leader" {
					got, err = readEntries(ctx, n, s, false)
				}
			}
			if err != nil {
				time.Sleep(50 * time.Millisecond)
			}
		}
		if err != nil {
			t.Fatalf("shard %d: %v", s, err)
		}
		if got < want {
			t.Errorf("shard %d: read %d, last acknowledged %d", s, got, want)
		}
	}
	// A removed node may not come back under its ID.
	if _, err := tc.nodes[0].ctrlJoinAny(nn.self); err == nil {
		t.Errorf("removed node re-joined")
	}
}

// TestDeadNodeReplicasMove: a node that stays unreachable for DeadAfter
// loses its replicas: every shard it held gets a replacement on a live
// node (added and caught up before the dead one is removed), so each shard
// is back to three voters, all alive.
func TestDeadNodeReplicasMove(t *testing.T) {
	tc := startCluster(t, 4, 8, func(c *Config) { c.DeadAfter = 2 * time.Second })
	waitControllers(t, tc, 20*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	// The victim is not the controller leader, so the plan keeps running.
	victim := -1
	for i, n := range tc.nodes {
		if c := n.ctrl.Load(); c == nil || c.r.State() != raft.Leader {
			victim = i
		}
	}
	dead := tc.nodes[victim]
	deadID := dead.ID()
	dead.close(false)
	tc.nodes[victim] = nil
	t0 := time.Now()
	for {
		ok := true
		for s := 0; s < 8 && ok; s++ {
			var voters []string
			for _, n := range tc.nodes {
				if n == nil {
					continue
				}
				if ls := n.shard(s); ls != nil && ls.s.IsLeader() {
					if f := ls.s.Raft().GetConfiguration(); f.Error() == nil {
						for _, sv := range f.Configuration().Servers {
							if sv.Suffrage == raft.Voter {
								voters = append(voters, string(sv.ID))
							}
						}
					}
				}
			}
			ok = len(voters) == 3 && !slices.Contains(voters, deadID)
		}
		if ok {
			break
		}
		if time.Since(t0) > 60*time.Second {
			t.Fatal("dead node's replicas not replaced within 60s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("dead node's replicas replaced %v after it stopped (DeadAfter 2s)", time.Since(t0))
	for s := 0; s < 8; s++ {
		if err := tc.submitFollowing(ctx, s, 500+s); err != nil {
			t.Fatal(err)
		}
	}
}
