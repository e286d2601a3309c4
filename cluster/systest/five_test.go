package systest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/raftstream/raftstream/jepsen/local"
	"github.com/raftstream/raftstream/jepsen/testkit"
)

// TestSystemFiveNodesPartitionAndTwoKills (issue point 5c): 5 nodes, RF 5.
//
// Partition: every node-to-node link goes through its own TCP proxy
// (jepsen/local.Net, one proxy per ordered pair): node X is started with
// --debug-dial-map rewriting each peer Y's bus address to the proxy of link
// X→Y, so every connection X opens to Y — Raft, controller, health RPCs —
// crosses that link's proxy, and Y's connections to X cross Y→X's. Isolating
// X blackholes every link from and to X, in both directions, while clients
// still reach X's RESP port directly. The isolated node must then serve
// neither writes nor linearizable reads, for keys of every shard, while the
// majority keeps serving. After healing, two nodes are killed at once and
// the remaining three serve every shard.
func TestSystemFiveNodesPartitionAndTwoKills(t *testing.T) {
	const n, shards = 5, 8
	c := newCluster(t, n, shards, "--replication-factor", "5")
	net := local.NewNet()
	defer net.Close()
	for _, x := range c.procs {
		var rewrites []string
		for _, y := range c.procs {
			if x == y {
				continue
			}
			addr, err := net.Add(x.Name, y.Name, y.BusAddr())
			if err != nil {
				t.Fatal(err)
			}
			rewrites = append(rewrites, y.BusAddr()+"="+addr)
		}
		x.Args = append(x.Args, "--debug-dial-map", strings.Join(rewrites, ","))
	}
	testkit.StartAll(t, c.procs...)
	for _, p := range c.procs {
		c.waitCovered(p, 60*time.Second)
	}
	keys := keyPerShard("p5:", shards)
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	majority := []string{c.procs[0].Addr, c.procs[1].Addr, c.procs[2].Addr, c.procs[3].Addr}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: majority, MaxRedirects: 16, DialTimeout: 500 * time.Millisecond,
		ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second})
	defer cc.Close()
	written := map[string]int64{}
	writeAll := func(what string, budget time.Duration) {
		t.Helper()
		t0 := time.Now()
		for _, k := range keys {
			var err error
			for time.Since(t0) < budget {
				if err = cc.XAdd(ctx, &redis.XAddArgs{Stream: k, Values: []string{"f", what}}).Err(); err == nil {
					written[k]++
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			if err != nil {
				t.Fatalf("%s: XADD %s: %v", what, k, err)
			}
		}
		t.Logf("%s: every shard took a write within %v", what, time.Since(t0))
	}
	writeAll("before", 30*time.Second)

	// Isolate n4 (links in both directions blackholed).
	iso := c.procs[4]
	t.Logf("%s", net.Isolate(local.Blackhole, 0, iso.Name))
	tIso := time.Now()
	ic := redis.NewClient(&redis.Options{Addr: iso.Addr, MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second})
	defer ic.Close()
	served := 0
	refusals := map[string]int{}
	for time.Since(tIso) < 6*time.Second {
		for _, k := range keys {
			if err := ic.XAdd(ctx, &redis.XAddArgs{Stream: k, Values: []string{"f", "isolated"}}).Err(); err == nil {
				served++
				t.Errorf("isolated node acknowledged XADD %s", k)
			} else {
				refusals[kind(err)]++
			}
			if _, err := ic.XLen(ctx, k).Result(); err == nil {
				served++
				t.Errorf("isolated node answered XLEN %s (linearizable read on a minority)", k)
			} else {
				refusals[kind(err)]++
			}
		}
	}
	t.Logf("isolated node refused everything for 6s: %v", refusals)
	writeAll("during partition (majority)", 30*time.Second)
	net.Heal()
	for _, p := range c.procs {
		c.waitCovered(p, 60*time.Second)
	}
	writeAll("healed", 30*time.Second)

	// Two simultaneous kills.
	done := make(chan struct{}, 2)
	for _, p := range c.procs[3:] {
		go func() { p.Kill(); done <- struct{}{} }()
	}
	<-done
	<-done
	// Server side first (MOVED followed by hand), then the client workload.
	t.Logf("after killing two of five: every shard accepted a write (server side, following MOVED) within %v",
		writeFollowingMoved(t, c.procs[0].Addr, keys, 30*time.Second))
	for _, k := range keys {
		written[k]++
	}
	cc3 := redis.NewClusterClient(&redis.ClusterOptions{Addrs: majority[:3], MaxRedirects: 16, DialTimeout: 500 * time.Millisecond,
		ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second})
	defer cc3.Close()
	cc = cc3
	writeAll("after killing two of five", 30*time.Second)
	for _, k := range keys {
		got, err := cc.XLen(ctx, k).Result()
		if err != nil || got != written[k] {
			t.Errorf("XLEN %s = %d, %v; want %d", k, got, err, written[k])
		}
	}
}

// kind classifies a refusal for the log.
func kind(err error) string {
	s := err.Error()
	if i := strings.IndexByte(s, ' '); i > 0 && strings.ToUpper(s[:i]) == s[:i] {
		return s[:i]
	}
	if strings.Contains(s, "timeout") {
		return "timeout"
	}
	return fmt.Sprintf("%.30s", s)
}
