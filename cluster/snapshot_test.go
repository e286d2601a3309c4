package cluster

import (
	"context"
	"testing"
	"time"
)

// TestSnapshotSchedulerPicksMostBehindShard drives the scheduler by hand:
// each call snapshots at most one shard, the one with the most entries since
// its last snapshot, and none below the threshold.
func TestSnapshotSchedulerPicksMostBehindShard(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.Shards = 3
	cfg.SnapshotThreshold = 5
	cfg.SnapshotInterval = time.Hour // no automatic tick during the test
	n := startNode(t, cfg)
	defer n.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	writes := map[int]int{1: 10, 2: 20}
	for s, k := range writes {
		for i := 0; i < k; i++ {
			if err := setEntries(ctx, n, s, i+1); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got, lag := n.pickSnapshot(); got != 2 || lag < 20 {
		t.Fatalf("pickSnapshot = %d (%d entries), want shard 2", got, lag)
	}
	for _, want := range []int{2, 1, -1} {
		got, err := n.snapshotOnce()
		if got != want {
			t.Fatalf("snapshotOnce = %d, want %d", got, want)
		}
		if err != nil {
			t.Fatalf("snapshot of shard %d: %v", got, err)
		}
	}
	for s := range writes {
		if n.shard(s).s.Raft().Stats()["last_snapshot_index"] == "0" {
			t.Fatalf("shard %d has no snapshot", s)
		}
	}
}

// TestFollowerCatchesUpFromSnapshot: a follower that was down while the
// leader snapshotted and truncated its log is brought back by snapshot
// install, with every write.
func TestFollowerCatchesUpFromSnapshot(t *testing.T) {
	tc := startCluster(t, 3, 1, func(c *Config) {
		c.SnapshotThreshold = 10
		c.SnapshotInterval = time.Hour // snapshots taken by hand below
		c.TrailingLogs = 5
	})
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	var follower int
	for i, n := range tc.nodes {
		if st, _ := n.ShardStatus(0); st.Role != "leader" {
			follower = i
		}
	}
	cfg := tc.cfgs[follower]
	if err := tc.nodes[follower].Close(); err != nil {
		t.Fatal(err)
	}
	tc.nodes[follower] = nil
	for i := 1; i <= 60; i++ {
		if err := tc.submitFollowing(ctx, 0, i); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range tc.nodes {
		if n == nil {
			continue
		}
		if s, err := n.snapshotOnce(); s != 0 || err != nil {
			t.Fatalf("snapshotOnce = %d, %v", s, err)
		}
		if first := n.shard(0).s.Raft().Stats()["last_snapshot_index"]; first == "0" {
			t.Fatal("no snapshot")
		}
	}
	n, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tc.nodes[follower] = n
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := waitStale(ctx, n, 0, 60); err != nil {
		t.Fatal(err)
	}
	// It got there by snapshot install: it now holds a snapshot it never
	// took itself (its scheduler interval is an hour).
	if idx := n.shard(0).s.Raft().Stats()["last_snapshot_index"]; idx == "0" {
		t.Fatal("follower caught up without a snapshot install")
	}
}
