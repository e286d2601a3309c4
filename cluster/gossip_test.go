package cluster

import (
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/raftstream/raftstream/jepsen/testkit"
)

// TestGossipLivenessAndMetadata: with GossipAddr set, every node's
// memberlist sees the others with their RESP and bus addresses as metadata;
// a node that stops without leaving (crash) is reported down in Topology
// by gossip; a graceful Close leaves the gossip cluster.
func TestGossipLivenessAndMetadata(t *testing.T) {
	used := map[int]bool{}
	tc := startCluster(t, 3, 4, func(c *Config) {
		for {
			p := testkit.FreePort(t)
			if !used[p] {
				used[p] = true
				c.GossipAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
				c.GossipLabel = "test-" + t.Name()
				return
			}
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		ok := true
		for _, n := range tc.nodes {
			ms := n.GossipMembers()
			ok = ok && len(ms) == 3
			for _, o := range tc.nodes {
				if m, found := ms[o.ID()]; !found || m.RESP != o.self.RESPAddr() || m.Bus != o.self.Bus {
					ok = false
				}
			}
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("gossip never converged: %v", tc.nodes[0].GossipMembers())
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Crash (no hand-off, no leave): gossip marks it failed.
	victim := tc.nodes[2]
	vid := victim.ID()
	victim.gossip.Load().stop(false) // silent: as a crash would be, without a leave message
	t0 := time.Now()
	for !tc.nodes[0].gossipDead(vid) || !tc.nodes[1].gossipDead(vid) {
		if time.Since(t0) > 20*time.Second {
			t.Fatal("gossip did not report the silent node dead in 20s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("gossip reported the silent node failed in %v", time.Since(t0))
	for _, ni := range tc.nodes[0].Topology().Nodes {
		if ni.ID == vid && ni.Up {
			t.Errorf("topology still shows the gossip-dead node up")
		}
	}
	// A graceful Close leaves: the others learn it at once (no suspicion).
	// The bound starts when Close returns: Close first hands over its
	// leaderships, which takes seconds on a loaded machine.
	id1 := tc.nodes[1].ID()
	tc.nodes[1].Close()
	tc.nodes[1] = nil
	t1 := time.Now()
	for !tc.nodes[0].gossipDead(id1) {
		if time.Since(t1) > 5*time.Second {
			t.Fatal("graceful leave not seen within 5s of Close returning")
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("graceful leave seen %v after Close returned", time.Since(t1))
}
