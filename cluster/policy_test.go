package cluster

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/raftstream/raftstream/slots"
)

// applyPlan assigns the planned runs to their shards, checking that each
// run is owned by one shard other than its target.
func applyPlan(t *testing.T, sm *slots.Map, plan []plannedMove) *slots.Map {
	t.Helper()
	for _, p := range plan {
		from := sm.Shard(p.r.First)
		for s := p.r.First; s <= p.r.Last; s++ {
			if sm.Shard(s) != from || from == p.to {
				t.Fatalf("move %v: slot %d owned by %d (run starts on %d)", p, s, sm.Shard(s), from)
			}
		}
		var err error
		if sm, err = sm.Assign(p.r, p.to); err != nil {
			t.Fatal(err)
		}
	}
	return sm
}

// spreadUntilStill runs planSpread until it plans nothing (at most max
// steps) and returns the map and the steps taken.
func spreadUntilStill(t *testing.T, sm *slots.Map, w []float64, live []int, max int) (*slots.Map, int) {
	t.Helper()
	for step := 0; step < max; step++ {
		plan := planSpread(sm, w, live)
		if len(plan) == 0 {
			return sm, step
		}
		sm = applyPlan(t, sm, plan)
	}
	t.Fatalf("planSpread still moving after %d steps", max)
	return nil, 0
}

func unitWeights() []float64 {
	w := make([]float64, slots.Count)
	for i := range w {
		w[i] = 1
	}
	return w
}

// checkSpread fails unless the heaviest and lightest live shard differ by
// at most a fifth of the mean (plus the heaviest single slot, which cannot
// be split).
func checkSpread(t *testing.T, sm *slots.Map, w []float64, live []int, what string) {
	t.Helper()
	W, total := shardWeights(sm, w, live)
	mean := total / float64(len(live))
	hi, lo := math.Inf(-1), math.Inf(1)
	for _, s := range live {
		hi, lo = math.Max(hi, W[s]), math.Min(lo, W[s])
	}
	if hi-lo > mean/5+slices.Max(w) {
		t.Fatalf("%s: shard weights %v (mean %.0f) not spread", what, W, mean)
	}
}

// TestPlanSpreadGivesANewShardItsShare: an empty cluster of 3 shards gains
// a 4th with no slot; one step gives it a quarter of the slots, a run from
// each shard, and the next plans nothing (a fixed point).
func TestPlanSpreadGivesANewShardItsShare(t *testing.T) {
	sm := slots.NewMap(3)
	live := []int{0, 1, 2, 3}
	w := unitWeights()
	plan := planSpread(sm, w, live)
	if len(plan) != 3 {
		t.Fatalf("plan %v: want one run from each of the 3 shards", plan)
	}
	sm = applyPlan(t, sm, plan)
	checkSpread(t, sm, w, live, "after one step")
	if again := planSpread(sm, w, live); len(again) != 0 {
		t.Fatalf("second step plans %v", again)
	}
	if n := len(sm.RangesOf(3)); n != 3 {
		t.Fatalf("new shard owns %d ranges, want 3", n)
	}
}

// TestPlanSpreadByData: 16 heavy streams (orders:{0..15}'s slots), all on
// shard 0 of 6, spread so that no shard is far from the mean by weight,
// within a few steps; an already even map plans nothing.
func TestPlanSpreadByData(t *testing.T) {
	w := unitWeights()
	for i := range 16 {
		w[slots.OfString(fmt.Sprintf("orders:{%d}", i))] += 5000
	}
	sm := slots.NewMap(1)
	for s := 1; s < 6; s++ {
		var err error
		if sm, err = sm.Assign(slots.Range{First: 16384 - s*2000, Last: 16384 - s*2000 + 999}, s); err != nil {
			t.Fatal(err)
		}
	}
	live := []int{0, 1, 2, 3, 4, 5}
	sm, steps := spreadUntilStill(t, sm, w, live, 20)
	checkSpread(t, sm, w, live, "heavy streams")
	t.Logf("spread in %d steps", steps)
	if plan := planSpread(slots.NewMap(4), unitWeights(), []int{0, 1, 2, 3}); len(plan) != 0 {
		t.Fatalf("an even map plans %v", plan)
	}
}

// TestPlanRetireEmptiesTheVictim: every slot of the retired shard goes to
// another live shard, in few runs, leaving the others spread.
func TestPlanRetireEmptiesTheVictim(t *testing.T) {
	for _, tc := range []struct {
		shards, victim int
		heavy          bool
	}{{6, 5, false}, {6, 2, true}, {4, 0, false}, {2, 1, true}} {
		w := unitWeights()
		if tc.heavy {
			for i := range 16 {
				w[slots.OfString(fmt.Sprintf("orders:{%d}", i))] += 3000
			}
		}
		sm := slots.NewMap(tc.shards)
		var live []int
		for s := range tc.shards {
			live = append(live, s)
		}
		plan := planRetire(sm, w, live, tc.victim)
		if len(plan) > 2*(tc.shards-1)+2 {
			t.Fatalf("%+v: %d runs: %v", tc, len(plan), plan)
		}
		for _, p := range plan {
			if p.to == tc.victim || !slices.Contains(live, p.to) {
				t.Fatalf("%+v: run %v to a shard that is not live or is the victim", tc, p)
			}
		}
		sm = applyPlan(t, sm, plan)
		if rs := sm.RangesOf(tc.victim); len(rs) != 0 {
			t.Fatalf("%+v: victim still owns %v", tc, rs)
		}
		rest := slices.DeleteFunc(slices.Clone(live), func(s int) bool { return s == tc.victim })
		sm, _ = spreadUntilStill(t, sm, w, rest, 10)
		checkSpread(t, sm, w, rest, fmt.Sprintf("%+v", tc))
	}
}

// TestWantShards: K per member, one shard for a single node, never none.
func TestWantShards(t *testing.T) {
	for _, tc := range []struct {
		k       float64
		members int
		want    int
	}{{1, 1, 1}, {1, 3, 3}, {1, 6, 6}, {16.0 / 3, 3, 16}, {16.0 / 3, 6, 32}, {0.5, 3, 2}, {0.1, 3, 1}, {4, 1, 1}} {
		if got := (&ShardPolicy{PerNode: tc.k}).wantShards(make([]Member, tc.members)); got != tc.want {
			t.Errorf("K %v, %d members: %d shards, want %d", tc.k, tc.members, got, tc.want)
		}
	}
	for _, tc := range []struct {
		c    Config
		want int
	}{
		{Config{BootstrapExpect: 3}, 3},
		{Config{BootstrapExpect: 3, ShardsPerNode: 2}, 6},
		{Config{BootstrapExpect: 1}, 1},
		{Config{BootstrapExpect: 5}, 5},
	} {
		c := tc.c
		c.Join = []string{"127.0.0.1:1"}
		if got := c.defaultShards(); got != tc.want {
			t.Errorf("%+v: default shards %d, want %d", tc.c, got, tc.want)
		}
	}
}

// TestHostUnits: members of one host count as min(their number,
// max(1, CPUs/2)); a member without a host hash or a CPU count counts
// alone; K multiplies the units only when the policy fits the hosts.
func TestHostUnits(t *testing.T) {
	on := func(host string, cpus, n int) []Member {
		ms := make([]Member, n)
		for i := range ms {
			ms[i] = Member{ID: fmt.Sprint(host, i), HostHash: host, CPUs: cpus}
		}
		return ms
	}
	for _, tc := range []struct {
		name    string
		members []Member
		units   int
	}{
		{"3 nodes on a 2-CPU host", on("h", 2, 3), 1},
		{"3 nodes on a 1-CPU host", on("h", 1, 3), 1},
		{"3 nodes on a 4-CPU host", on("h", 4, 3), 2},
		{"3 nodes on a 5-CPU host", on("h", 5, 3), 2},
		{"3 nodes on a 6-CPU host", on("h", 6, 3), 3},
		{"3 nodes on a 64-CPU host", on("h", 64, 3), 3},
		{"3 hosts of 2 CPUs", slices.Concat(on("a", 2, 1), on("b", 2, 1), on("c", 2, 1)), 3},
		{"3 nodes on a 2-CPU host, 1 elsewhere", slices.Concat(on("h", 2, 3), on("x", 2, 1)), 2},
		{"no host hash", on("", 2, 3), 3},
		{"no CPU count", on("h", 0, 3), 3},
		{"one host, one node without a count", append(on("h", 2, 2), Member{ID: "z", HostHash: "h"}), 2},
		{"CPU counts differ: the most counts", append(on("h", 2, 2), Member{ID: "z", HostHash: "h", CPUs: 4}), 2},
	} {
		if got := hostUnits(tc.members); got != tc.units {
			t.Errorf("%s: %d units, want %d", tc.name, got, tc.units)
		}
		fit := &ShardPolicy{PerNode: 1, FitHosts: true}
		if got, want := fit.wantShards(tc.members), max(1, tc.units); got != want {
			t.Errorf("%s: fitted policy wants %d shards, want %d", tc.name, got, want)
		}
		if got, want := (&ShardPolicy{PerNode: 1}).wantShards(tc.members), len(tc.members); got != want {
			t.Errorf("%s: per-node policy wants %d shards, want %d", tc.name, got, want)
		}
	}
	if got := (&ShardPolicy{PerNode: 2, FitHosts: true}).wantShards(on("h", 4, 3)); got != 4 {
		t.Errorf("K 2 on 2 units: %d shards, want 4", got)
	}
	if got := (&ShardPolicy{PerNode: 1, FitHosts: true}).wantShards(on("h", 64, 1)); got != 1 {
		t.Errorf("one node: %d shards, want 1", got)
	}
	for _, tc := range []struct {
		c   Config
		fit bool
	}{
		{Config{BootstrapExpect: 3}, true},
		{Config{BootstrapExpect: 3, Shards: 3}, false},
		{Config{BootstrapExpect: 3, ShardsPerNode: 1}, false},
	} {
		if got := tc.c.initialPolicy().FitHosts; got != tc.fit {
			t.Errorf("%+v: initial policy fits the hosts: %v, want %v", tc.c, got, tc.fit)
		}
	}
}

// TestNewShardLedFromAHostThatLeadsNone: a new shard's preferred leader is
// a member of the host whose members lead the fewest shards, even when a
// member of a leading host holds fewer replicas.
func TestNewShardLedFromAHostThatLeadsNone(t *testing.T) {
	n := &Node{cfg: Config{ReplicationFactor: 3}}
	m := &Membership{
		Nodes:  []Member{{ID: "a", HostHash: "h"}, {ID: "b", HostHash: "h"}, {ID: "c", HostHash: "h"}, {ID: "d", HostHash: "x"}},
		Shards: [][]string{{"a", "b", "d"}},
	}
	got, err := n.placeNewShard(m, nil)
	if err != nil || got[0] != "d" {
		t.Fatalf("new shard placed on %v (%v), want d, of the host leading none, first", got, err)
	}
	m.Nodes[3].HostHash = "h" // one host: c holds the fewest replicas
	if got, err := n.placeNewShard(m, nil); err != nil || got[0] != "c" {
		t.Fatalf("new shard placed on %v (%v), want c first", got, err)
	}
}

// TestNewShardLedByANodeThatLeadsNone: the shard the policy adds prefers
// as leader the member preferring the fewest shards (the one that just
// joined), even when it already holds replicas of others; the retired one
// is the shard of a draining leader, else of the node preferring most.
func TestNewShardLedByANodeThatLeadsNone(t *testing.T) {
	n := &Node{cfg: Config{ReplicationFactor: 3}}
	m := &Membership{
		Nodes: []Member{{ID: "a"}, {ID: "b"}, {ID: "c"}, {ID: "d"}},
		Shards: [][]string{
			{"a", "b", "d"}, {"b", "c", "d"}, {"c", "a", "d"},
		},
	}
	reps, err := n.placeNewShard(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	if reps[0] != "d" || len(reps) != 3 || slices.Contains(reps[1:], "d") {
		t.Fatalf("new shard on %v: want d first, then two others", reps)
	}
	m.Shards = append(m.Shards, reps)
	if got := retireCandidate(m, []int{0, 1, 2, 3}); got != 3 {
		// Every node prefers one shard: the highest number.
		t.Fatalf("retire %d, want 3", got)
	}
	m.Draining = []string{"b"}
	if got := retireCandidate(m, []int{0, 1, 2, 3}); got != 1 {
		t.Fatalf("retire %d, want 1 (its preferred leader b drains)", got)
	}
}
