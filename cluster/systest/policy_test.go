package systest

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/raftstream/raftstream/jepsen/testkit"
)

// shardShape is what the slot map and CLUSTER SHARDS say on addr: the
// shards owning slots, who leads each (node ID), and the moves in flight.
func shardShape(ctx context.Context, addr string) (owners map[int]bool, leadOf map[string]int, moves int, err error) {
	cl := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: 5 * time.Second})
	defer cl.Close()
	v, err := cl.Do(ctx, "RAFTSTREAM", "SLOTS", "STATUS").Slice()
	if err != nil {
		return nil, nil, 0, err
	}
	if len(v) != 6 {
		return nil, nil, 0, fmt.Errorf("SLOTS STATUS: %v", v)
	}
	mv, _ := v[3].([]any)
	owners = map[int]bool{}
	runs, _ := v[5].([]any)
	for _, r := range runs {
		t3, _ := r.([]any)
		if len(t3) == 3 {
			sh, _ := t3[2].(int64)
			owners[int(sh)] = true
		}
	}
	leadOf, _, err = leaders(ctx, cl)
	return owners, leadOf, len(mv), err
}

// shardPolicy reads RAFTSTREAM SHARD POLICY on addr.
func shardPolicy(ctx context.Context, addr string) (string, error) {
	cl := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: 5 * time.Second})
	defer cl.Close()
	v, err := cl.Do(ctx, "RAFTSTREAM", "SHARD", "POLICY").Slice()
	return fmt.Sprint(v), err
}

// TestSystemShardPolicyScaleOutAndIn (issue point 2): a 3-node cluster
// formed with the defaults has 3 shards, one led by each node, and the
// shard policy on. Under a go-redis ClusterClient writing orders:{0..15},
// three nodes join: with no operator action the cluster grows to 6 shards
// that own slots, every one of the 6 nodes leading one, within 60 s; then
// three nodes are removed (RAFTSTREAM REMOVE-NODE) and it shrinks back to 3
// shards, each remaining node leading one, within 60 s of the last
// removal. The writers see no error other than redirects and TRYAGAIN
// (retried), every acknowledged XADD is in its stream exactly once, in
// order, and the throughput of each phase is logged.
func TestSystemShardPolicyScaleOutAndIn(t *testing.T) {
	if testing.Short() {
		t.Skip("long process test")
	}
	c := startCluster(t, 3, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	if p, err := shardPolicy(ctx, c.procs[0].Addr); err != nil || p != "[auto yes per-node 1 fit-hosts yes]" {
		t.Fatalf("shard policy of a default cluster: %q %v", p, err)
	}
	// waitShape waits until the slot map has want shards owning slots,
	// no move is in flight, and every node of procs leads exactly one of
	// them (a node may answer with a stale map: ask each in turn).
	waitShape := func(procs []*testkit.Node, want int, d time.Duration) time.Duration {
		t.Helper()
		ids := map[string]bool{}
		for _, p := range procs {
			ids[c.nodeID(p)] = true
		}
		var last string
		t0 := time.Now()
		for i := 0; ; i++ {
			p := procs[i%len(procs)]
			owners, leadOf, moves, err := shardShape(ctx, p.Addr)
			ok := err == nil && len(owners) == want && moves == 0 && len(leadOf) == len(procs)
			for id, k := range leadOf {
				ok = ok && ids[id] && k == 1
			}
			if ok {
				return time.Since(t0)
			}
			last = fmt.Sprintf("%s: %d shards own slots, %d moves, leaders %v, err %v", p.Name, len(owners), moves, leadOf, err)
			if time.Since(t0) > d {
				t.Fatalf("not %d shards, one led by each of %d nodes, within %v: %s", want, len(procs), d, last)
			}
			time.Sleep(250 * time.Millisecond)
		}
	}
	waitShape(c.procs, 3, 60*time.Second)

	var keys []string
	for i := range 16 {
		keys = append(keys, "orders:{"+strconv.Itoa(i)+"}")
	}
	l := startWriteLoad(t, []string{c.procs[0].Addr, c.procs[1].Addr, c.procs[2].Addr}, keys)
	defer l.cc.Close()
	defer l.halt()
	errors := 0
	phase := func(what string, d time.Duration) {
		t.Helper()
		n0, _, _, errs, _ := l.report() // acknowledged so far; errors since the last report
		for _, e := range errs {
			errors += e
		}
		time.Sleep(d)
		n, gap, retries, errs, samples := l.report()
		for _, e := range errs {
			errors += e
		}
		t.Logf("%s: %.0f XADD/s over %v (longest gap %v), retried %v, errors %v %q",
			what, float64(n-n0)/d.Seconds(), d, gap.Round(time.Millisecond), retries, errs, samples)
	}
	phase("3 nodes × 3 shards", 8*time.Second)

	orig := slices.Clone(c.procs)
	var joined []*testkit.Node
	for range 3 {
		joined = append(joined, c.newJoiner())
	}
	t0 := time.Now()
	for _, p := range joined {
		p.Start()
	}
	d := waitShape(c.procs, 6, 90*time.Second)
	t.Logf("scale-out: 6 shards with slots, each of the 6 nodes leading one, %v after the joins started", time.Since(t0).Round(time.Millisecond))
	if out := time.Since(t0); out > 60*time.Second {
		t.Errorf("scale-out took %v (waited %v for the shape), want at most 60 s", out, d)
	}
	l.cc.ReloadState(ctx)
	phase("6 nodes × 6 shards", 8*time.Second)

	// Scale in: remove three nodes, one at a time (the last three to
	// join), through a node that stays.
	var gone []*testkit.Node
	for _, p := range joined {
		id := c.nodeID(p)
		t1 := time.Now()
		if err := removeNode(ctx, orig[0].Addr, id); err != nil {
			t.Fatalf("REMOVE-NODE %s: %v", p.Name, err)
		}
		t.Logf("%s removed in %v", p.Name, time.Since(t1).Round(time.Millisecond))
		gone = append(gone, p)
	}
	t2 := time.Now()
	waitShape(orig, 3, 90*time.Second)
	t.Logf("scale-in: 3 shards with slots, each of the 3 remaining nodes leading one, %v after the last removal", time.Since(t2).Round(time.Millisecond))
	if in := time.Since(t2); in > 60*time.Second {
		t.Errorf("scale-in took %v after the last removal, want at most 60 s", in)
	}
	l.cc.ReloadState(ctx)
	time.Sleep(time.Second)
	for _, p := range gone {
		if err := p.Stop(15 * time.Second); err != nil {
			t.Errorf("%s: %v", p.Name, err)
		}
	}
	phase("3 nodes × 3 shards again", 8*time.Second)
	l.halt()
	n := l.verify(t)
	t.Logf("%d acknowledged XADDs verified in their streams, in order", n)
	if errors > 0 {
		t.Errorf("the writers saw %d errors other than redirects and TRYAGAIN", errors)
	}
}
