package cluster

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func TestCtrlTargetIsOdd(t *testing.T) {
	for n, want := range []int{0, 1, 1, 3, 3, 5, 5, 5, 5} {
		if got := ctrlTarget(n); got != want {
			t.Errorf("ctrlTarget(%d) = %d, want %d", n, got, want)
		}
	}
}

// planCtrlVoters: joined nodes become voters while the group is below its
// odd target (3 nodes: 3; a fourth adds none, a fifth brings it to 5); a
// draining or long-dead voter is replaced by a live member, or, with none
// to replace it, the group shrinks to an odd size (a down voter going
// first); a voter that is merely down is kept; the result is deterministic
// and a fixed point.
func TestPlanCtrlVoters(t *testing.T) {
	none := func(string) bool { return false }
	all := func(string) bool { return true }
	not := func(ids ...string) func(string) bool {
		return func(id string) bool { return !slices.Contains(ids, id) }
	}
	in := func(ids ...string) func(string) bool {
		return func(id string) bool { return slices.Contains(ids, id) }
	}
	for _, tc := range []struct {
		name          string
		cur, members  []string
		dropped, live func(string) bool
		want          string
	}{
		{"formed 3", []string{"a", "b", "c"}, []string{"a", "b", "c"}, none, all, "a,b,c"},
		{"a fourth joins: still 3 (odd)", []string{"a", "b", "c"}, []string{"a", "b", "c", "d"}, none, all, "a,b,c"},
		{"a fifth joins: 5", []string{"a", "b", "c"}, []string{"a", "b", "c", "d", "e"}, none, all, "a,b,c,d,e"},
		{"six: still 5", []string{"a", "b", "c", "d", "e"}, []string{"a", "b", "c", "d", "e", "f"}, none, all, "a,b,c,d,e"},
		{"draining voter replaced", []string{"a", "b", "c"}, []string{"a", "b", "c", "d"}, in("a"), not("a"), "b,c,d"},
		{"long-dead voter replaced by a live node", []string{"a", "b", "c"}, []string{"a", "b", "c", "d", "e"}, in("b"), not("b", "e"), "a,c,d"},
		{"down voter kept", []string{"a", "b", "c"}, []string{"a", "b", "c", "d"}, none, not("b"), "a,b,c"},
		{"no replacement: odd again", []string{"a", "b", "c"}, []string{"a", "b", "c"}, in("c"), not("c"), "a"},
		{"a voter of 5 removed: 3, the down one out", []string{"a", "b", "c", "d", "e"}, []string{"a", "b", "c", "d", "e"}, in("e"), not("b", "e"), "a,c,d"},
		{"legacy list of 4 trimmed to 3", []string{"a", "b", "c", "d"}, []string{"a", "b", "c", "d"}, none, all, "a,b,c"},
		{"removed member gone", []string{"a", "b", "x"}, []string{"a", "b", "c"}, none, all, "a,b,c"},
		{"nobody live to add", []string{"a"}, []string{"a", "b", "c"}, none, in("a"), "a"},
	} {
		got := planCtrlVoters(tc.cur, tc.members, tc.dropped, tc.live)
		if strings.Join(got, ",") != tc.want {
			t.Errorf("%s: got %v, want %s", tc.name, got, tc.want)
		}
		if again := planCtrlVoters(got, tc.members, tc.dropped, tc.live); !slices.Equal(again, got) {
			t.Errorf("%s: not a fixed point: %v then %v", tc.name, got, again)
		}
	}
}

// removable: a live surplus voter leaves only while every remaining voter
// is live; a down one while the rest keep a live majority.
func TestRemovableKeepsFaultTolerance(t *testing.T) {
	voters := func(ids ...string) []raft.Server {
		var out []raft.Server
		for _, id := range ids {
			out = append(out, raft.Server{ID: raft.ServerID(id), Suffrage: raft.Voter})
		}
		return out
	}
	live := func(ids ...string) map[string]bool {
		m := map[string]bool{}
		for _, id := range ids {
			m[id] = true
		}
		return m
	}
	for _, tc := range []struct {
		servers []raft.Server
		id      string
		live    map[string]bool
		want    bool
	}{
		{voters("a", "b", "c", "d"), "a", live("a", "b", "c", "d"), true},
		{voters("a", "b", "c"), "a", live("a", "b"), false},           // c down: {b, c} would have no quorum margin
		{voters("a", "b", "c", "d"), "a", live("a", "b", "d"), false}, // c down
		{voters("a", "b", "c", "d"), "c", live("a", "b", "d"), true},  // c itself down: b, d, a keep a majority
		{voters("a", "b", "c"), "c", live("a"), false},                // a alone is no majority of {a, b}
		{voters("a"), "a", live("a"), false},
	} {
		if got := removable(tc.servers, tc.id, tc.live); got != tc.want {
			t.Errorf("remove %s from %v with live %v: %v, want %v", tc.id, tc.servers, tc.live, got, tc.want)
		}
	}
}

// wholeWithout says OK only when the controller dropped the node and left
// it out of its group, and every shard it had has a committed
// configuration without it and a full set of live member voters.
func TestWholeWithout(t *testing.T) {
	m := &Membership{Nodes: []Member{{ID: "b"}, {ID: "c"}, {ID: "d"}}, Removed: []string{"a"},
		Shards: [][]string{{"b", "c", "d"}, {"c", "d", "b"}}}
	ctrl := groupConf{Shard: -1, Committed: true, Voters: []string{"b", "c", "d"}, Live: []string{"b", "c", "d"}}
	whole := func() map[int]groupConf {
		return map[int]groupConf{-1: ctrl,
			0: {Shard: 0, Term: 3, Committed: true, Voters: []string{"b", "c", "d"}, Live: []string{"b", "c", "d"}},
			1: {Shard: 1, Term: 2, Committed: true, Voters: []string{"c", "d", "b"}, Live: []string{"b", "c", "d"}}}
	}
	if err := wholeWithout("a", []int{0, 1}, m, whole(), 3); err != nil {
		t.Fatalf("whole cluster: %v", err)
	}
	for _, tc := range []struct {
		name  string
		edit  func(m *Membership, c map[int]groupConf)
		wants string
	}{
		{"still a member", func(m *Membership, c map[int]groupConf) {
			m.Nodes = append(m.Nodes, Member{ID: "a"})
			m.Shards[0] = []string{"a", "b", "c"}
		}, "still a member"},
		{"still in the controller group", func(m *Membership, c map[int]groupConf) {
			cc := c[-1]
			cc.Nonvoters = []string{"a"}
			c[-1] = cc
		}, "still in the controller group"},
		{"still a shard voter", func(m *Membership, c map[int]groupConf) {
			c[1] = groupConf{Shard: 1, Committed: true, Voters: []string{"a", "c", "d"}, Live: []string{"a", "c", "d"}}
		}, "shard 1: still a replica"},
		{"configuration not committed", func(m *Membership, c map[int]groupConf) {
			g := c[0]
			g.Committed = false
			c[0] = g
		}, "shard 0: still a replica"},
		{"a voter short", func(m *Membership, c map[int]groupConf) {
			c[0] = groupConf{Shard: 0, Committed: true, Voters: []string{"b", "c"}, Live: []string{"b", "c"}}
		}, "shard 0: 2 of 3 voters live"},
		{"a voter down", func(m *Membership, c map[int]groupConf) {
			c[0] = groupConf{Shard: 0, Committed: true, Voters: []string{"b", "c", "d"}, Live: []string{"b", "c"}}
		}, "not live: d"},
		{"no leader", func(m *Membership, c map[int]groupConf) { delete(c, 1) }, "shard 1: no leader answered"},
		{"an unaffected shard still lists it", func(m *Membership, c map[int]groupConf) {
			c[2] = groupConf{Shard: 2, Committed: true, Voters: []string{"a", "b", "c"}}
		}, "shard 2: still a replica"},
	} {
		mm, c := m.clone(), whole()
		tc.edit(mm, c)
		err := wholeWithout("a", []int{0, 1}, mm, c, 3)
		if err == nil || !strings.Contains(err.Error(), tc.wants) {
			t.Errorf("%s: %v, want an error containing %q", tc.name, err, tc.wants)
		}
	}
	// Fewer nodes than the replication factor: every node is a full set.
	small := &Membership{Nodes: []Member{{ID: "b"}, {ID: "c"}}, Shards: [][]string{{"b", "c"}}}
	c := map[int]groupConf{-1: ctrl, 0: {Shard: 0, Committed: true, Voters: []string{"b", "c"}, Live: []string{"b", "c"}}}
	if err := wholeWithout("a", []int{0}, small, c, 3); err != nil {
		t.Errorf("two nodes left, RF 3: %v", err)
	}
}

// join opens and starts one more node that joins tc's running cluster.
func (tc *testCluster) join(t *testing.T, name string, opts ...func(*Config)) *Node {
	t.Helper()
	c := testConfig(t, t.TempDir())
	c.Shards = tc.cfgs[0].Shards
	c.Join = tc.cfgs[0].Join
	loadedTiming(&c)
	c.BalanceInterval = 300 * time.Millisecond
	c.NodeName = name
	for _, o := range opts {
		o(&c)
	}
	n, err := Open(c)
	if err != nil {
		t.Fatal(err)
	}
	tc.nodes = append(tc.nodes, n)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return n
}

// ctrlConf returns the controller group's configuration as its leader in
// tc sees it ("" leader when none leads).
func (tc *testCluster) ctrlConf() (leader string, voters, nonvoters []string) {
	for _, n := range tc.nodes {
		if n == nil {
			continue
		}
		if c := n.ctrl.Load(); c != nil && c.r.State() == raft.Leader {
			v, nv, _ := n.ctrlConfig()
			return n.ID(), v, nv
		}
	}
	return "", nil, nil
}

// waitCtrl waits until the controller's leader reports a configuration
// for which ok holds.
func (tc *testCluster) waitCtrl(t *testing.T, what string, d time.Duration, ok func(voters, nonvoters []string) bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		l, v, nv := tc.ctrlConf()
		if l != "" && ok(v, nv) {
			t.Logf("%s: controller voters %d, non-voters %d", what, len(v), len(nv))
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached in %v (leader %.8s, voters %v, non-voters %v)", what, d, l, v, nv)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// candidateWatch fails the test if any node's controller replica stays a
// candidate for 5 s (an election it can never win: the joined node's
// replica did that, outside the group's configuration).
func candidateWatch(t *testing.T, tc *testCluster, mu *sync.Mutex) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		since := map[string]time.Time{}
		for {
			select {
			case <-done:
				return
			case <-time.After(100 * time.Millisecond):
			}
			mu.Lock()
			for _, n := range tc.nodes {
				if n == nil {
					continue
				}
				c := n.ctrl.Load()
				if c == nil || c.r.State() != raft.Candidate {
					delete(since, n.ID())
					continue
				}
				if since[n.ID()].IsZero() {
					since[n.ID()] = time.Now()
				} else if time.Since(since[n.ID()]) > 5*time.Second {
					t.Errorf("node %s: controller replica a candidate for 5s (in its config: %v)", n.cfg.NodeName, inConfig(c.r, n.ID()))
					delete(since, n.ID())
				}
			}
			mu.Unlock()
		}
	}()
	return func() { close(done); wg.Wait() }
}

// TestControllerFollowsMembership: joined nodes become controller voters
// while there are fewer than the odd target (a fourth node adds none and
// runs no controller replica, a fifth brings the group to 5); removing the
// controller leader hands the group over and leaves an odd 3; a voter that
// stays down past the grace period is replaced by a live member. No node
// ever sits in a controller election it cannot win.
func TestControllerFollowsMembership(t *testing.T) {
	tc := startCluster(t, 3, 2, func(c *Config) { c.DeadAfter = 3 * time.Second })
	waitControllers(t, tc, 20*time.Second)
	var mu sync.Mutex
	stop := candidateWatch(t, tc, &mu)
	defer stop()
	tc.waitCtrl(t, "formed", 10*time.Second, func(v, nv []string) bool { return len(v) == 3 && len(nv) == 0 })

	opt := func(c *Config) { c.DeadAfter = 3 * time.Second }
	mu.Lock()
	n4 := tc.join(t, "n3", opt)
	mu.Unlock()
	// Four nodes: still three voters; the joiner runs no controller replica.
	for end := time.Now().Add(4 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if n4.ctrl.Load() != nil {
			t.Fatal("the fourth node runs a controller replica")
		}
	}
	tc.waitCtrl(t, "four nodes", 5*time.Second, func(v, nv []string) bool { return len(v) == 3 && len(nv) == 0 })
	mu.Lock()
	n5 := tc.join(t, "n4", opt)
	mu.Unlock()
	tc.waitCtrl(t, "five nodes", 60*time.Second, func(v, nv []string) bool {
		return len(v) == 5 && len(nv) == 0 && slices.Contains(v, n4.ID()) && slices.Contains(v, n5.ID())
	})
	// The joiners' own replicas learn of their promotion a moment after
	// the leader's configuration lists them.
	for _, n := range []*Node{n4, n5} {
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if c := n.ctrl.Load(); c != nil && isVoter(c.r, n.ID()) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: no controller voter replica", n.cfg.NodeName)
			}
		}
	}

	// Remove the controller leader itself.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	leader, _, _ := tc.ctrlConf()
	var via *Node
	for _, n := range tc.nodes {
		if n.ID() != leader {
			via = n
		}
	}
	t0 := time.Now()
	if err := via.RemoveNode(ctx, leader); err != nil {
		t.Fatal(err)
	}
	t.Logf("controller leader removed in %v", time.Since(t0))
	l, v, nv := tc.ctrlConf()
	if l == leader || slices.Contains(v, leader) || slices.Contains(nv, leader) || len(v) != 3 {
		t.Fatalf("after removing the controller leader: leader %.8s voters %v non-voters %v", l, v, nv)
	}
	removed := tc.byID(leader)
	deadline := time.Now().Add(20 * time.Second)
	for removed.ctrl.Load() != nil {
		if time.Now().After(deadline) {
			t.Fatal("the removed node still runs its controller replica")
		}
		time.Sleep(50 * time.Millisecond)
	}
	mu.Lock()
	for i, n := range tc.nodes {
		if n == removed {
			n.Close()
			tc.nodes[i] = nil
		}
	}
	mu.Unlock()

	// A voter that stays down past the grace period is replaced.
	_, v, _ = tc.ctrlConf()
	var dead *Node
	for _, n := range tc.nodes {
		if n != nil && slices.Contains(v, n.ID()) {
			if c := n.ctrl.Load(); c.r.State() != raft.Leader {
				dead = n
			}
		}
	}
	deadID := dead.ID()
	mu.Lock()
	dead.close(false)
	for i, n := range tc.nodes {
		if n == dead {
			tc.nodes[i] = nil
		}
	}
	mu.Unlock()
	t1 := time.Now()
	tc.waitCtrl(t, "dead voter replaced", 60*time.Second, func(v, nv []string) bool {
		return len(v) == 3 && !slices.Contains(v, deadID) && len(nv) == 0
	})
	t.Logf("dead voter replaced %v after it stopped (grace 3s)", time.Since(t1))
}
