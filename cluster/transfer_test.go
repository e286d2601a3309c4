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
