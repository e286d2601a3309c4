package cluster

import (
	"bytes"
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/raftstream/raftstream/fsm"
	"github.com/raftstream/raftstream/slots"
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
// leader snapshotted and truncated its log past the follower's last entry
// is brought back by snapshot install, with every write.
func TestFollowerCatchesUpFromSnapshot(t *testing.T) {
	const trailing = 5
	tc := startCluster(t, 3, 1, func(c *Config) {
		c.SnapshotThreshold = 10
		c.SnapshotInterval = time.Hour // snapshots taken by hand below
		c.TrailingLogs = trailing
	})
	ctx, cancel := context.WithTimeout(context.Background(), workBudget)
	defer cancel()
	follower := -1
	for i, n := range tc.nodes {
		if st, ok := n.ShardStatus(0); ok && st.Role == "follower" {
			follower = i
		}
	}
	if follower < 0 {
		t.Fatal("no follower of shard 0")
	}
	cfg := tc.cfgs[follower]
	fr := tc.nodes[follower].shard(0).s.Raft()
	if err := tc.nodes[follower].Close(); err != nil {
		t.Fatal(err)
	}
	// Read once the follower is down: nothing can reach its log any more.
	followerLast := raftStat(t, fr, "last_log_index")
	tc.nodes[follower] = nil
	for i := 1; i <= 60; i++ {
		if err := tc.submitFollowing(ctx, 0, i); err != nil {
			t.Fatal(err)
		}
	}
	// Both live replicas snapshot by hand. Raft then deletes its log up to
	// min(snapshot index, last index - TrailingLogs); that must reach past
	// the entry the follower needs next, or it could catch up by append.
	var snapIdx uint64
	for _, n := range tc.nodes {
		if n == nil {
			continue
		}
		if s, err := n.snapshotOnce(); s != 0 || err != nil {
			t.Fatalf("snapshotOnce = %d, %v", s, err)
		}
		r := n.shard(0).s.Raft()
		snap, last := raftStat(t, r, "last_snapshot_index"), raftStat(t, r, "last_log_index")
		var cut uint64 // raft deleted the entries up to cut
		if last > trailing {
			cut = min(snap, last-trailing)
		}
		if cut <= followerLast {
			t.Fatalf("node %s: snapshot %d, last index %d: log kept from %d, follower stopped at %d",
				n.ID(), snap, last, cut+1, followerLast)
		}
		if snapIdx == 0 || snap < snapIdx {
			snapIdx = snap
		}
	}
	t.Logf("follower stopped at index %d; live replicas snapshotted at >= %d (trailing %d)", followerLast, snapIdx, trailing)
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
	if got, err := readEntries(ctx, n, 0, true); err != nil || got != 60 {
		t.Fatalf("restarted follower reads %d, %v; want 60", got, err)
	}
	// It got there by snapshot install: it now holds a snapshot at least as
	// new as the ones taken while it was down, and never took one itself
	// (its scheduler interval is an hour). Raft records the installed
	// snapshot just after the FSM restore that made the data visible, so
	// wait (bounded) for that bookkeeping; a follower that caught up by
	// append never gets there.
	r := n.shard(0).s.Raft()
	visible := time.Now()
	deadline := visible.Add(10 * time.Second)
	late := raftStat(t, r, "last_snapshot_index") < snapIdx
	for raftStat(t, r, "last_snapshot_index") < snapIdx {
		if time.Now().After(deadline) {
			t.Fatalf("follower caught up without a snapshot install (last_snapshot_index %d, want >= %d)",
				raftStat(t, r, "last_snapshot_index"), snapIdx)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if late {
		t.Logf("install recorded %v after the data was visible", time.Since(visible))
	}
	if taken := n.shard(0).s.Stats().Snapshots; taken != 0 {
		t.Fatalf("follower took %d snapshots itself", taken)
	}
}

// raftStat reads a numeric field of r's stats.
func raftStat(t *testing.T, r *raft.Raft, key string) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(r.Stats()[key], 10, 64)
	if err != nil {
		t.Fatalf("raft stat %s: %v", key, err)
	}
	return v
}

// TestQuietShardLetsTheNodeLogShrink: a shard that wrote a burst larger
// than the node log carries forward (4 MiB), with fewer entries than the
// snapshot threshold, and then went quiet, used to hold the node log's
// segment with its first entry and every segment after it, so the node log
// grew with every other shard's writes for as long as it stayed quiet. The
// scheduler snapshots such a shard (raft then compacts its log), and the
// node log stays a few segments long.
func TestQuietShardLetsTheNodeLogShrink(t *testing.T) {
	const seg = 256 << 10
	cfg := testConfig(t, t.TempDir())
	cfg.NodeLogSegmentBytes = seg
	cfg.Shards = 2
	cfg.SnapshotThreshold = 500
	cfg.TrailingLogs = 50
	cfg.SnapshotInterval = 100 * time.Millisecond
	n := startNode(t, cfg)
	defer n.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	keys := [2][]byte{}
	for i := 0; keys[0] == nil || keys[1] == nil; i++ {
		k := []byte("k" + strconv.Itoa(i))
		keys[n.ShardOfSlot(slots.Of(k))] = k
	}
	xadd := func(shard int, size int) {
		t.Helper()
		unit := fsm.Unit{{[]byte("XADD"), keys[shard], []byte("*"), []byte("f"), bytes.Repeat([]byte("v"), size)}}
		rs, err := n.Submit(shard, unit).Wait(ctx)
		if err != nil || len(rs) != 1 || isErr(rs[0]) {
			t.Fatalf("XADD on shard %d: %v %v", shard, rs, err)
		}
	}
	// Shard 0: 400 entries of 12 KiB (4.8 MiB, below the threshold), then
	// nothing more.
	for range 400 {
		xadd(0, 12<<10)
	}
	// Shard 1 keeps writing: 3,000 entries of 2 KiB (6 MiB, 24 segments),
	// snapshotted and compacted as it goes.
	for i := range 3000 {
		xadd(1, 2<<10)
		if i%500 == 0 {
			t.Logf("after %d writes to shard 1: %d segments", i, n.NodeLogStats().Segments)
		}
	}
	// The node log holds shard 0's last 50 entries (600 KiB, carried
	// forward) and shard 1's last few hundred: a handful of segments.
	// Holding shard 0's burst and everything after it is 40 or more.
	const most = 12
	deadline := time.Now().Add(20 * time.Second)
	for {
		st := n.NodeLogStats()
		if st.Segments <= most {
			t.Logf("%d segments, %d deleted, %d entries carried forward", st.Segments, st.SegmentsDeleted, st.Relocated)
			if st.SegmentsDeleted == 0 {
				t.Fatalf("no segment was deleted: the node log did not take NodeLogSegmentBytes %d", seg)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the node log has %d segments (%d deleted), want at most %d; shard 0's last snapshot: %s",
				st.Segments, st.SegmentsDeleted, most, n.shard(0).s.Raft().Stats()["last_snapshot_index"])
		}
		xadd(1, 2<<10) // segments are let go when the writer starts a new one
	}
	if h := n.shard(0).s.Stats().NodeLogSegmentsHeld; h >= heldSegments {
		t.Errorf("shard 0's log still holds %d segments", h)
	}
}
