package cluster

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/raftstream/raftstream/fsm"
)

// TestTransferNeverRedirectsToSelf: writes submitted to a shard's leader
// while it hands leadership over fail with a NotLeaderError naming the new
// leader (or no leader, which resp answers TRYAGAIN), never the old leader
// itself — which made clients loop on MOVED to the same node.
func TestTransferNeverRedirectsToSelf(t *testing.T) {
	tc := startCluster(t, 3, 4, func(c *Config) { c.BalanceInterval = -1 })
	ctx, cancel := context.WithTimeout(context.Background(), workBudget)
	defer cancel()
	named, unknown := 0, 0
	for round := 0; round < 6; round++ {
		var l *Node
		for _, n := range tc.nodes {
			if st, ok := n.ShardStatus(0); ok && st.Role == "leader" {
				l = n
			}
		}
		if l == nil {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		f := l.shard(0).s.Raft().LeadershipTransfer()
		for i := 0; i < 200; i++ {
			err := setEntries(ctx, l, 0, 10+i)
			var nl *fsm.NotLeaderError
			if errors.As(err, &nl) {
				switch nl.LeaderID {
				case l.ID():
					t.Fatalf("round %d: old leader named itself during a transfer: %v", round, err)
				case "":
					unknown++
				default:
					named++
				}
				break
			}
		}
		if err := f.Error(); err != nil {
			t.Logf("round %d: transfer: %v", round, err)
		}
		if err := tc.submitFollowing(ctx, 0, 1000+round); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("redirects naming the new leader: %d, naming none: %d", named, unknown)
	if named == 0 {
		t.Fatal("no write refused during six transfers naming the new leader")
	}
}

// TestStuckTransferRestartsTheReplica: a shard leader whose raft keeps
// refusing writes as "leadership transfer in progress" for longer than
// StuckTransferAfter gets its replica restarted (fsm/transfer.go, raft's
// issue #696), and the shard then takes writes again with its data intact.
// A transfer to a voter that is down holds the flag up for an election
// timeout, longer here than the test's StuckTransferAfter.
func TestStuckTransferRestartsTheReplica(t *testing.T) {
	tc := startCluster(t, 3, 1, func(c *Config) {
		c.BalanceInterval = -1
		c.ElectionTimeout = 5 * time.Second
		c.StuckTransferAfter = 300 * time.Millisecond
	})
	ctx, cancel := context.WithTimeout(context.Background(), workBudget)
	defer cancel()
	if err := tc.submitFollowing(ctx, 0, 7); err != nil {
		t.Fatal(err)
	}
	var l, f *Node
	for _, n := range tc.nodes {
		if st, ok := n.ShardStatus(0); ok && st.Role == "leader" {
			l = n
		} else if f == nil {
			f = n
		}
	}
	if l == nil || f == nil {
		t.Fatal("no leader of shard 0 to test with")
	}
	for i, n := range tc.nodes {
		if n == f {
			n.Close()
			tc.nodes[i] = nil
		}
	}
	if err := setEntries(ctx, l, 0, 8); err != nil { // two of three are a quorum
		t.Fatal(err)
	}
	old := l.shard(0)
	go l.TransferLeader(ctx, 0, f.ID()) // catches f up until it times out
	restarted := false
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline) && !restarted; {
		_ = setEntries(ctx, l, 0, 100) // refused while the flag is up: the report
		ls := l.shard(0)
		restarted = ls != nil && ls != old
		time.Sleep(50 * time.Millisecond)
	}
	if !restarted {
		t.Fatal("the replica was not restarted while its raft refused writes as a transfer in progress")
	}
	if err := tc.submitFollowing(ctx, 0, 9); err != nil {
		t.Fatal(err)
	}
	for _, n := range tc.nodes {
		if n == nil {
			continue
		}
		if st, ok := n.ShardStatus(0); ok && st.Role == "leader" {
			if v, err := readEntries(ctx, n, 0, false); err != nil || v != 9 {
				t.Fatalf("read after the restart: %d, %v; want 9", v, err)
			}
			return
		}
	}
	t.Fatal("no leader of shard 0 after the restart")
}
