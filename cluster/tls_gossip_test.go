package cluster

import (
	"bytes"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/raftstream/raftstream/jepsen/testkit"
)

// With GossipKey set, gossip is encrypted and authenticated: a node holding
// another key is never admitted to the others' memberlist view.
func TestGossipKeyKeepsOutsidersOut(t *testing.T) {
	used := map[int]bool{}
	i := 0
	tc := startCluster(t, 3, 1, func(c *Config) {
		for {
			p := testkit.FreePort(t)
			if !used[p] {
				used[p] = true
				c.GossipAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
				c.GossipLabel = "test-" + t.Name()
				break
			}
		}
		c.GossipKey = bytes.Repeat([]byte{'k'}, 32)
		if i == 2 {
			c.GossipKey = bytes.Repeat([]byte{'x'}, 32)
		}
		i++
	})
	a, b, outsider := tc.nodes[0], tc.nodes[1], tc.nodes[2]
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, ok := a.GossipMembers()[b.ID()]; ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("nodes sharing the key never met: %v", a.GossipMembers())
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Give the outsider several join rounds (every 2 s).
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if _, ok := a.GossipMembers()[outsider.ID()]; ok {
			t.Fatal("a node with another gossip key was admitted")
		}
		if len(outsider.GossipMembers()) > 1 {
			t.Fatalf("the outsider sees members: %v", outsider.GossipMembers())
		}
	}
}
