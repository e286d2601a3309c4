// Package systest runs real raftstream processes (testkit nodes:
// cmd/raftstream built once per test binary, without -race) on 127.0.0.1
// and checks the cluster from the outside: redis-cli, redis-benchmark,
// go-redis. Every process is killed by PID at cleanup, every loop is
// bounded.
package systest

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/raftstream/raftstream/jepsen/testkit"
	"github.com/raftstream/raftstream/slots"
)

// TestMain builds the server once, without -race even under go test -race:
// the suite's time budgets (failover, catch-up) are the broker's, not the
// race detector's.
func TestMain(m *testing.M) { testkit.Main(m, false) }

// nodeArgs are every node's flags: its name in the log, info logging and
// half-second elections.
var nodeArgs = []string{"--node-name", "{name}", "--host-id", "{name}", "--log-level", "info",
	"--raft-heartbeat-timeout", "500ms", "--raft-election-timeout", "500ms"}

// cluster is a set of processes formed together.
type cluster struct {
	t     testing.TB
	procs []*testkit.Node
	buses []string // the formed cluster's bus addresses
}

// newCluster prepares (does not start) n nodes forming a cluster with the
// given shard count and extra flags.
func newCluster(t *testing.T, n, shards int, extra ...string) *cluster {
	t.Helper()
	args := append(append(slices.Clone(nodeArgs), "--shards", strconv.Itoa(shards)), extra...)
	c := &cluster{t: t, procs: testkit.NewCluster(t, n, args...)}
	for _, p := range c.procs {
		c.buses = append(c.buses, p.BusAddr())
	}
	return c
}

// startCluster starts n nodes forming a cluster with the given shard count
// and extra flags, and waits until every node answers and CLUSTER SLOTS
// covers all slots with known leaders.
func startCluster(t *testing.T, n, shards int, extra ...string) *cluster {
	t.Helper()
	c := newCluster(t, n, shards, extra...)
	testkit.StartAll(t, c.procs...)
	for _, p := range c.procs {
		c.waitCovered(p, 60*time.Second)
	}
	return c
}

// newJoiner prepares (does not start) one more node that joins the running
// cluster, with extra flags (--shards N for a cluster of other than 16).
func (c *cluster) newJoiner(extra ...string) *testkit.Node {
	name := fmt.Sprint("n", len(c.procs)+1)
	args := append(append(slices.Clone(nodeArgs), "--join", strings.Join(c.buses, ",")), extra...)
	p := testkit.NewNode(c.t, name, "", args...)
	c.procs = append(c.procs, p)
	return p
}

// client is a plain go-redis client of node p.
func client(p *testkit.Node) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: p.Addr, MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: 5 * time.Second})
}

// waitCovered waits until p's CLUSTER SLOTS covers all 16384 slots.
func (c *cluster) waitCovered(p *testkit.Node, d time.Duration) {
	c.t.Helper()
	cl := client(p)
	defer cl.Close()
	deadline := time.Now().Add(d)
	var last string
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		ss, err := cl.ClusterSlots(ctx).Result()
		cancel()
		if err == nil {
			covered := 0
			for _, s := range ss {
				if len(s.Nodes) > 0 {
					covered += s.End - s.Start + 1
				}
			}
			if covered == slots.Count {
				return
			}
			last = fmt.Sprintf("%d slots covered", covered)
		} else {
			last = err.Error()
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.t.Fatalf("%s: CLUSTER SLOTS never covered every slot (%s)\n%s", p.Name, last, p.Tail())
}

// leaders returns, per node ID, the shards it leads according to p's
// CLUSTER SHARDS, and the shard (by first slot) → leader ID.
func leaders(ctx context.Context, cl *redis.Client) (map[string]int, map[int64]string, error) {
	ss, err := cl.ClusterShards(ctx).Result()
	if err != nil {
		return nil, nil, err
	}
	count, byShard := map[string]int{}, map[int64]string{}
	for _, s := range ss {
		for _, n := range s.Nodes {
			if n.Role == "master" && len(s.Slots) > 0 {
				count[n.ID]++
				byShard[s.Slots[0].Start] = n.ID
			}
		}
	}
	return count, byShard, nil
}

// nodeIDs maps each process to its node ID (CLUSTER MYID).
func (c *cluster) nodeID(p *testkit.Node) string {
	cl := client(p)
	defer cl.Close()
	for i := 0; i < 50; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		id, err := cl.Do(ctx, "CLUSTER", "MYID").Text()
		cancel()
		if err == nil {
			return id
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.t.Fatalf("%s: CLUSTER MYID failed", p.Name)
	return ""
}

// keyPerShard returns one key with a hash tag per shard of an nShards
// cluster: keys[i] lives on shard i.
func keyPerShard(prefix string, nShards int) []string {
	m := slots.NewMap(nShards)
	keys := make([]string, nShards)
	found := 0
	for i := 0; found < nShards && i < 1_000_000; i++ {
		k := fmt.Sprintf("%s{%d}", prefix, i)
		if s := m.ShardOfKey([]byte(k)); keys[s] == "" {
			keys[s] = k
			found++
		}
	}
	return keys
}

// nodeClients holds one plain client per node address, made on first use
// (following MOVED by hand).
type nodeClients struct {
	readTimeout time.Duration
	m           map[string]*redis.Client
}

func newNodeClients(readTimeout time.Duration) *nodeClients {
	return &nodeClients{readTimeout: readTimeout, m: map[string]*redis.Client{}}
}

func (c *nodeClients) get(addr string) *redis.Client {
	if c.m[addr] == nil {
		c.m[addr] = redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 300 * time.Millisecond, ReadTimeout: c.readTimeout})
	}
	return c.m[addr]
}

func (c *nodeClients) close() {
	for _, cl := range c.m {
		cl.Close()
	}
}

// writeFollowingMoved writes one entry to every key through node addr,
// following MOVED by hand and retrying other refusals every 10 ms (no
// client-side slot cache), and returns how long until all were accepted.
func writeFollowingMoved(t *testing.T, addr string, keys []string, budget time.Duration) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	t0 := time.Now()
	clients := newNodeClients(time.Second)
	defer clients.close()
	get := clients.get
	for _, k := range keys {
		target := addr
		for {
			err := get(target).XAdd(ctx, &redis.XAddArgs{Stream: k, Values: []string{"seq", "probe"}}).Err()
			if err == nil {
				break
			}
			if strings.HasPrefix(err.Error(), "MOVED ") {
				target = strings.Fields(err.Error())[2]
				continue
			}
			if ctx.Err() != nil {
				t.Fatalf("%s: no write accepted within %v: %v", k, budget, err)
			}
			target = addr
			time.Sleep(10 * time.Millisecond)
		}
	}
	return time.Since(t0)
}
