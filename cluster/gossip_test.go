package cluster

import (
	"context"
	"testing"
	"time"
)

// TestGossipLivenessAndMetadata: by default gossip rides the bus port;
// every node's memberlist sees the others with their RESP and bus
// addresses, leaderships and open replica counts as metadata, and nobody
// polls anybody; a node that stops without leaving (crash) is reported
// down in Topology by gossip; a graceful Close leaves the gossip cluster.
func TestGossipLivenessAndMetadata(t *testing.T) {
	tc := startCluster(t, 3, 4, func(c *Config) { c.GossipLabel = "test-" + t.Name() })
	deadline := time.Now().Add(20 * time.Second)
	for {
		ok := true
		for _, n := range tc.nodes {
			ms := n.GossipMembers()
			ok = ok && len(ms) == 3
			for _, o := range tc.nodes {
				if m, found := ms[o.ID()]; !found || m.RESP != o.self.RESPAddr() || m.Bus != o.self.Bus || m.Hosted != 4 {
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
	if err := tc.nodes[0].WaitLeaders(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, n := range tc.nodes {
		if bs := n.BusStats(); bs.Gossip != "bus" || bs.GossipMembers != 3 {
			t.Fatalf("bus stats: %+v", bs)
		}
	}
	// Leaderships ride the metadata: every shard's leader is known on every
	// node without a poll.
	polls := tc.nodes[0].BusStats().StatusPolls
	time.Sleep(2 * pollInterval)
	if p := tc.nodes[0].BusStats().StatusPolls; p != polls {
		t.Errorf("%d status polls while gossip covers every member", p-polls)
	}
	// Crash (no hand-off, no leave): gossip marks it down.
	victim := tc.nodes[2]
	vid := victim.ID()
	victim.gossip.Load().stop(false) // silent: as a crash would be, without a leave message
	t0 := time.Now()
	for tc.nodes[0].health.up(vid) || tc.nodes[1].health.up(vid) {
		if time.Since(t0) > 20*time.Second {
			t.Fatal("gossip did not report the silent node down in 20s")
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
	for tc.nodes[0].health.up(id1) {
		if time.Since(t1) > 5*time.Second {
			t.Fatal("graceful leave not seen within 5s of Close returning")
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("graceful leave seen %v after Close returned", time.Since(t1))
}
