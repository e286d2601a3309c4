package systest

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/raftstream/raftstream/jepsen/testkit"
	"github.com/raftstream/raftstream/slots"
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

// clusterSlots reads CLUSTER SLOTS on addr.
func clusterSlots(ctx context.Context, addr string) ([]redis.ClusterSlot, error) {
	cl := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: 5 * time.Second})
	defer cl.Close()
	return cl.ClusterSlots(ctx).Result()
}

// slotMaster is the master address ss gives for slot, "" if none.
func slotMaster(ss []redis.ClusterSlot, slot int) string {
	for _, s := range ss {
		if slot >= s.Start && slot <= s.End && len(s.Nodes) > 0 {
			return s.Nodes[0].Addr
		}
	}
	return ""
}

// slotMasters counts the slots ss gives each master, named by process
// (by address when not one of procs).
func slotMasters(ss []redis.ClusterSlot, procs []*testkit.Node) map[string]int {
	out := map[string]int{}
	for _, s := range ss {
		if len(s.Nodes) == 0 {
			continue
		}
		name := s.Nodes[0].Addr
		for _, p := range procs {
			if p.Addr == name {
				name = p.Name
			}
		}
		out[name] += s.End - s.Start + 1
	}
	return out
}

// waitClientRoutes reloads cc's slot map synchronously (ForEachMaster
// does, from any node cc knows) until every master in it is one of stay
// and it sends each key to the master that stay's CLUSTER SLOTS names,
// and still does so half a second later (a reload cc started in the
// background may land after a synchronous one). It fails the test if
// that does not happen within d or 60 reloads, and returns how many
// reloads it took and how many of them got a map naming a master not in
// stay.
func waitClientRoutes(ctx context.Context, t *testing.T, cc *redis.ClusterClient, stay []*testkit.Node, keys []string, d time.Duration) (reloads, strays int) {
	t.Helper()
	staying := map[string]bool{}
	for _, p := range stay {
		staying[p.Addr] = true
	}
	// routed reports the first key cc sends elsewhere than ss says,
	// without reloading cc's map.
	routed := func(ss []redis.ClusterSlot) string {
		for _, k := range keys {
			want := slotMaster(ss, slots.OfString(k))
			m, err := cc.MasterForKey(ctx, k)
			if err != nil {
				return fmt.Sprintf("%s: %v", k, err)
			}
			if got := m.Options().Addr; got != want || !staying[got] {
				return fmt.Sprintf("%s routed to %s, its master is %s", k, got, want)
			}
		}
		return ""
	}
	t0 := time.Now()
	var last string
	for reloads < 60 && time.Since(t0) < d {
		time.Sleep(100 * time.Millisecond)
		p := stay[reloads%len(stay)]
		ss, err := clusterSlots(ctx, p.Addr)
		if err != nil {
			last = fmt.Sprintf("CLUSTER SLOTS on %s: %v", p.Name, err)
			continue
		}
		var mu sync.Mutex
		var masters []string
		err = cc.ForEachMaster(ctx, func(_ context.Context, cl *redis.Client) error {
			mu.Lock()
			defer mu.Unlock()
			masters = append(masters, cl.Options().Addr)
			return nil
		})
		reloads++
		if err != nil {
			last = fmt.Sprintf("reload: %v", err)
			continue
		}
		if stray := slices.DeleteFunc(slices.Clone(masters), func(a string) bool { return staying[a] }); len(stray) > 0 {
			strays++
			last = fmt.Sprintf("masters %v include %v, not a remaining node", masters, stray)
			continue
		}
		if last = routed(ss); last != "" {
			continue
		}
		time.Sleep(500 * time.Millisecond)
		if last = routed(ss); last == "" {
			return reloads, strays
		}
	}
	t.Fatalf("the writers' client did not settle on routes to the remaining nodes only (%d reloads in %v, %d with a removed node as master): %s",
		reloads, time.Since(t0).Round(time.Millisecond), strays, last)
	return reloads, strays
}

// TestSystemShardPolicyScaleOutAndIn (issue point 2): a 3-node cluster
// formed with the defaults has 3 shards, one led by each node, and the
// shard policy on. Under a go-redis ClusterClient writing orders:{0..15},
// three nodes join: with no operator action the cluster grows to 6 shards
// that own slots, every one of the 6 nodes leading one, within 60 s; then
// three nodes are removed (RAFTSTREAM REMOVE-NODE) and it shrinks back to 3
// shards, each remaining node leading one, within 60 s of the last
// removal; the removed nodes stop once the writers' client routes only to
// the remaining ones. The writers see no error other than redirects and
// TRYAGAIN (retried), every acknowledged XADD is in its stream exactly
// once, in order, and the throughput of each phase is logged.
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
	// The removed nodes still run and answer CLUSTER SLOTS with the map
	// they last had, which can name removed nodes as masters; a reload of
	// the writers' client asks any node it knows, removed ones included
	// (and ReloadState only starts one in the background). A route to a
	// removed node would be a connection error once the node stops: make
	// sure the client routes only to the remaining nodes first.
	for _, p := range gone {
		ss, err := clusterSlots(ctx, p.Addr)
		t.Logf("%s (removed, still running): CLUSTER SLOTS masters %v, err %v", p.Name, slotMasters(ss, c.procs), err)
	}
	reloads, strays := waitClientRoutes(ctx, t, l.cc, orig, keys, 30*time.Second)
	t.Logf("the writers' client routes only to the remaining nodes after %d synchronous reloads (%d of them took a map naming a removed node as master)", reloads, strays)
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
