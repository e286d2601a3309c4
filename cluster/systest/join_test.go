package systest

import (
	"context"
	"strings"
	"testing"
	"time"

	rscluster "github.com/raftstream/raftstream/cluster"
)

// TestSystemJoinAndRemove (issue point 5d): a fourth process started with
// --join against a running 3-node cluster receives replicas and leaderships
// within a minute; then it is removed (drained first: its replicas move
// back, its leaderships are handed over) and leaves CLUSTER NODES. A writer
// and a consumer run on every shard throughout; nothing acknowledged is lost.
func TestSystemJoinAndRemove(t *testing.T) {
	c := startCluster(t, 3, 16)
	addrs := []string{c.procs[0].Addr, c.procs[1].Addr, c.procs[2].Addr}
	keys := keyPerShard("jn:", 16)
	l := startLoad(t, addrs, keys)
	defer l.cc.Close()
	halted := false
	defer func() {
		if !halted {
			l.halt()
		}
	}()
	time.Sleep(2 * time.Second)

	nn := c.newJoiner()
	t0 := time.Now()
	nn.Start()
	id := c.nodeID(nn)
	cl := client(c.procs[0])
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	deadline := time.Now().Add(60 * time.Second)
	for {
		count, _, err := leaders(ctx, cl)
		replicas := 0
		if sh, e := cl.ClusterShards(ctx).Result(); e == nil {
			for _, s := range sh {
				for _, n := range s.Nodes {
					if n.ID == id {
						replicas++
					}
				}
			}
		}
		if err == nil && count[id] >= 3 && replicas >= 12 {
			t.Logf("joined node holds %d replicas and leads %d shards %v after start (leaders per node %v)",
				replicas, count[id], time.Since(t0), values(count))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 60s the joined node holds %d replicas and leads %d shards (%v)", replicas, count[id], err)
		}
		time.Sleep(200 * time.Millisecond)
	}

	t1 := time.Now()
	if err := rscluster.RequestRemove(ctx, c.buses[0], id, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(60 * time.Second)
	for {
		out, err := cl.ClusterNodes(ctx).Result()
		if err == nil && !strings.Contains(out, id) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("removed node still in CLUSTER NODES after 60s:\n%s", out)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("node drained and removed in %v", time.Since(t1))
	count, _, err := leaders(ctx, cl)
	if err != nil || count[id] != 0 || len(count) != 3 {
		t.Fatalf("leaders after removal: %v, %v", count, err)
	}
	time.Sleep(time.Second)
	l.halt()
	halted = true
	_ = nn.Stop(10 * time.Second)
	l.verify(t)
}
