package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/raftstream/raftstream/fsm"
	"github.com/raftstream/raftstream/jepsen/testkit"
)

// testCluster is n in-process nodes on loopback formed with
// BootstrapExpect n.
type testCluster struct {
	t     testing.TB
	cfgs  []Config
	nodes []*Node // nil once closed
}

func startCluster(t testing.TB, size, shards int, opts ...func(*Config)) *testCluster {
	t.Helper()
	tc := &testCluster{t: t}
	var join []string
	used := map[int]bool{}
	// FreePort releases the port, so two calls may return the same one:
	// keep every node's RESP and bus ports distinct.
	port := func() int {
		for {
			if p := testkit.FreePort(t); !used[p] {
				used[p] = true
				return p
			}
		}
	}
	for i := 0; i < size; i++ {
		c := testConfig(t, t.TempDir())
		c.AnnouncePort = port()
		c.Shards = shards
		c.BindAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port()))
		c.AdvertiseBus = ""
		c.BootstrapExpect = size
		c.NodeName = fmt.Sprintf("n%d", i)
		loadedTiming(&c)
		c.BalanceInterval = 300 * time.Millisecond
		for _, o := range opts {
			o(&c)
		}
		join = append(join, c.BindAddr)
		tc.cfgs = append(tc.cfgs, c)
	}
	for i := range tc.cfgs {
		tc.cfgs[i].Join = join
	}
	tc.nodes = make([]*Node, size)
	for i, c := range tc.cfgs {
		n, err := Open(c)
		if err != nil {
			t.Fatal(err)
		}
		tc.nodes[i] = n
	}
	t.Cleanup(tc.close)
	// Formation usually takes a few seconds; the bound is generous because
	// first elections of many groups are slow under -race on a loaded
	// 2-core machine, and the time taken is logged.
	t0 := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), formationBudget)
	defer cancel()
	errs := make(chan error, size)
	for _, n := range tc.nodes {
		go func() { errs <- n.Start(ctx) }()
	}
	for range tc.nodes {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range tc.nodes {
		if err := n.WaitLeaders(ctx); err != nil {
			t.Fatalf("%v after %v: shards without a known leader on %s: %v", err, time.Since(t0).Round(time.Millisecond), n.ID(), leaderless(n))
		}
	}
	t.Logf("%d nodes, %d shards: every shard led after %v", size, shards, time.Since(t0).Round(time.Millisecond))
	return tc
}

// formationBudget bounds forming a test cluster until every shard has a
// leader; workBudget bounds the writes and waits of one multi-node test
// after formation. Both are far above the usual seconds: the tests check
// that every shard gets a leader and takes writes, not how fast.
const (
	formationBudget = 2 * time.Minute
	workBudget      = 3 * time.Minute
)

// leaderless lists the shards n's topology shows without a leader.
func leaderless(n *Node) []int {
	var out []int
	for i, s := range n.Topology().Shards {
		if s.Leader == "" {
			out = append(out, i)
		}
	}
	return out
}

// loadedTiming gives a node of the multi-node tests hashicorp/raft's own
// timing (1 s heartbeat and election timeouts, 500 ms leader lease), twice
// the shard defaults the zero values select. 48 groups and more on a
// loaded 2-core machine under -race miss heartbeats by hundreds of
// milliseconds: with the 250 ms lease, leaders stepped down for want of a
// quorum's contact hundreds of times a run and shards went leaderless for
// seconds at a time, while the checks were meant to test the broker.
func loadedTiming(c *Config) {
	c.HeartbeatTimeout, c.ElectionTimeout, c.LeaderLeaseTimeout = time.Second, time.Second, 500*time.Millisecond
}

func (tc *testCluster) close() {
	var wg sync.WaitGroup
	for i, n := range tc.nodes {
		if n != nil {
			wg.Add(1)
			go func() { defer wg.Done(); n.Close() }()
			tc.nodes[i] = nil
		}
	}
	wg.Wait()
}

// byID returns the live node with id.
func (tc *testCluster) byID(id string) *Node {
	for _, n := range tc.nodes {
		if n != nil && n.ID() == id {
			return n
		}
	}
	return nil
}

// leadCounts counts, per live node, the shards whose local replica leads.
func (tc *testCluster) leadCounts() map[string]int {
	out := map[string]int{}
	for _, n := range tc.nodes {
		if n == nil {
			continue
		}
		for i := 0; i < n.NumShards(); i++ {
			if st, ok := n.ShardStatus(i); ok && st.Role == "leader" {
				out[n.ID()]++
			}
		}
	}
	return out
}

// submitFollowing writes to shard through any live node, following
// NotLeaderError redirects, until it succeeds or ctx ends.
func (tc *testCluster) submitFollowing(ctx context.Context, shard, v int) error {
	var target *Node
	for _, n := range tc.nodes {
		if n != nil {
			target = n
			break
		}
	}
	// hist keeps the last attempts (target, error, duration) for the
	// failure message.
	var hist []string
	t0 := time.Now()
	for {
		a0 := time.Now()
		err := setEntries(ctx, target, shard, v)
		if err == nil {
			return nil
		}
		hist = append(hist, fmt.Sprintf("+%v %s: %v (%v)", a0.Sub(t0).Round(time.Millisecond), target.cfg.NodeName, err, time.Since(a0).Round(time.Millisecond)))
		if len(hist) > 12 {
			hist = hist[1:]
		}
		var nl *fsm.NotLeaderError
		if errors.As(err, &nl) {
			if next := tc.byID(nl.LeaderID); next != nil {
				target = next
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("shard %d: %w (last error %v; last attempts %q)", shard, ctx.Err(), err, hist)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func TestThreeNodesFormBalanceAndSurviveANodeLoss(t *testing.T) {
	t0 := time.Now()
	tc := startCluster(t, 3, 16)
	t.Logf("formed with leaders in %v", time.Since(t0))
	// Bounds the writes and catch-up waits of the whole test; each phase
	// usually takes seconds, but elections are slow under -race on a loaded
	// machine.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// Every node agrees on the membership and the shard count.
	top := tc.nodes[0].Topology()
	if len(top.Nodes) != 3 || len(top.Shards) != 16 {
		t.Fatalf("topology: %d nodes, %d shards", len(top.Nodes), len(top.Shards))
	}
	for _, n := range tc.nodes[1:] {
		o := n.Topology()
		for i := range o.Shards {
			if fmt.Sprint(o.Shards[i].Replicas) != fmt.Sprint(top.Shards[i].Replicas) {
				t.Fatalf("node %s disagrees on shard %d replicas", n.ID(), i)
			}
		}
	}

	// The controller group holds the formed membership on every node.
	waitControllers(t, tc, 20*time.Second)

	// Leadership balances to 5–6 shards per node.
	start := time.Now()
	waitBalanced(t, tc, 30*time.Second)
	t.Logf("balanced in %v", time.Since(start))

	// A follower refuses with the leader's ID and RESP address.
	for _, n := range tc.nodes {
		if st, _ := n.ShardStatus(0); st.Role == "leader" {
			continue
		}
		err := setEntries(ctx, n, 0, 1)
		var nl *fsm.NotLeaderError
		if !errors.As(err, &nl) {
			t.Fatalf("follower write: %v", err)
		}
		l := tc.byID(nl.LeaderID)
		if l == nil || nl.LeaderAddr != l.self.RESPAddr() {
			t.Fatalf("NotLeaderError %+v, want a node's RESP address (leader node %v)", nl, l != nil && true)
		}
		break
	}

	for s := 0; s < 16; s++ {
		if err := tc.submitFollowing(ctx, s, 100+s); err != nil {
			t.Fatal(err)
		}
	}

	// Close the node leading shard 0; every shard keeps taking writes.
	leader0, closed := tc.nodes[0].Topology().Shards[0].Leader, -1
	for i := 0; i < 200 && tc.byID(leader0) == nil; i++ { // mid-election: wait for a leader
		time.Sleep(25 * time.Millisecond)
		leader0 = tc.nodes[0].Topology().Shards[0].Leader
	}
	for i, n := range tc.nodes {
		if n != nil && n.ID() == leader0 {
			closed = i
			start = time.Now()
			if err := n.Close(); err != nil {
				t.Fatal(err)
			}
			t.Logf("closed leader node in %v", time.Since(start))
			tc.nodes[i] = nil
		}
	}
	if closed < 0 {
		t.Fatalf("shard 0 has no leader among the nodes (%q)", leader0)
	}
	start = time.Now()
	for s := 0; s < 16; s++ {
		if err := tc.submitFollowing(ctx, s, 200+s); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("all 16 shards written after node loss in %v", time.Since(start))
	for _, n := range tc.nodes {
		if n == nil {
			continue
		}
		for s := 0; s < 16; s++ {
			if err := waitStale(ctx, n, s, 200+s); err != nil {
				t.Fatal(err)
			}
		}
	}

	// The closed node restarts from its data dir under the same ID,
	// catches up on every shard and gets its share of leaders back.
	n, err := Open(tc.cfgs[closed])
	if err != nil {
		t.Fatal(err)
	}
	tc.nodes[closed] = n
	if n.ID() != leader0 {
		t.Fatalf("restarted node has ID %s, want %s", n.ID(), leader0)
	}
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	for s := 0; s < 16; s++ {
		if err := waitStale(ctx, n, s, 200+s); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("restarted node caught up in %v", time.Since(start))
	// Every shard has a leader again (the restart must not leave groups
	// electing), then the restarted node gets its share back.
	t.Logf("every shard led %v after the catch-up", waitAllLed(t, tc, 60*time.Second))
	waitControllers(t, tc, 20*time.Second)
	waitBalanced(t, tc, 30*time.Second)
	start = time.Now()
	tc.close()
	t.Logf("closed cluster in %v", time.Since(start))
}

// waitBalanced waits until each of the 3 nodes leads 5 or 6 of 16 shards.
// The balancer hands shards over one at a time per node, and on a loaded
// machine leaders also change by election, so how long this takes varies
// with the load rather than with the broker: the wait fails when the
// imbalance (shards a node leads beyond 6 or short of 5, and shards without
// a leader) has not reached a new low for stall, or after 4×stall in all.
func waitBalanced(t *testing.T, tc *testCluster, stall time.Duration) {
	t.Helper()
	start := time.Now()
	best, bestAt := -1, start
	for {
		c := tc.leadCounts()
		bad, led := 0, 0
		for _, n := range tc.nodes {
			if n == nil {
				continue
			}
			v := c[n.ID()]
			led += v
			bad += max(0, 5-v) + max(0, v-6)
		}
		bad += 16 - led
		if bad == 0 && len(c) == 3 {
			t.Logf("leaders per node: %v after %v", c, time.Since(start).Round(time.Millisecond))
			return
		}
		if best < 0 || bad < best {
			best, bestAt = bad, time.Now()
		}
		if time.Since(bestAt) > stall || time.Since(start) > 4*stall {
			t.Fatalf("leadership not balanced after %v: %v (imbalance %d, lowest %d, %v ago)",
				time.Since(start).Round(time.Millisecond), c, bad, best, time.Since(bestAt).Round(time.Millisecond))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitAllLed waits until every shard has a leader among tc's live nodes,
// as those leaders see themselves, and returns how long that took.
func waitAllLed(t *testing.T, tc *testCluster, d time.Duration) time.Duration {
	t.Helper()
	return waitAllLedN(t, tc, 16, d)
}

// waitAllLedN is waitAllLed for a cluster of shards shards.
func waitAllLedN(t *testing.T, tc *testCluster, shards int, d time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		led := 0
		for s := 0; s < shards; s++ {
			for _, n := range tc.nodes {
				if n == nil {
					continue
				}
				if st, ok := n.ShardStatus(s); ok && st.Role == "leader" {
					led++
					break
				}
			}
		}
		if led == shards {
			return time.Since(start)
		}
		if time.Since(start) > d {
			t.Fatalf("only %d of %d shards have a leader after %v", led, shards, d)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitStale waits until n's local replica of shard shows v.
func waitStale(ctx context.Context, n *Node, shard, v int) error {
	for {
		got, err := readEntries(ctx, n, shard, true)
		if err == nil && got == v {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("node %s shard %d: %d, %v; want %d", n.ID(), shard, got, err, v)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// TestFiveNodesRouteNonLocalShards: with 5 nodes and 3 replicas per shard,
// a node that does not host a shard refuses with the leader's ID and RESP
// address (learned from health polls), and following it succeeds.
func TestFiveNodesRouteNonLocalShards(t *testing.T) {
	tc := startCluster(t, 5, 5)
	ctx, cancel := context.WithTimeout(context.Background(), workBudget)
	defer cancel()
	for _, n := range tc.nodes {
		hosted := 0
		for s := 0; s < 5; s++ {
			if _, ok := n.ShardStatus(s); ok {
				hosted++
			}
		}
		if hosted != 3 {
			t.Fatalf("node %s hosts %d shards, want 3", n.ID(), hosted)
		}
	}
	checked := 0
	for _, n := range tc.nodes {
		for s := 0; s < 5; s++ {
			if _, ok := n.ShardStatus(s); ok {
				continue
			}
			// Not hosted here: wait until health polls name the leader.
			var nl *fsm.NotLeaderError
			for {
				err := setEntries(ctx, n, s, 7)
				if !errors.As(err, &nl) {
					t.Fatalf("node %s shard %d: %v, want NotLeaderError", n.ID(), s, err)
				}
				if l := tc.byID(nl.LeaderID); l != nil {
					if st, ok := l.ShardStatus(s); ok && st.Role == "leader" {
						if nl.LeaderAddr != l.self.RESPAddr() {
							t.Fatalf("LeaderAddr %q, want %q", nl.LeaderAddr, l.self.RESPAddr())
						}
						err := setEntries(ctx, l, s, 7)
						if err == nil {
							break
						}
						// Leadership moved between the status check and
						// the commit (the balancer hands leaderships to
						// their preferred replicas in these first seconds,
						// and a starved leader steps down): ask again.
						var moved *fsm.NotLeaderError
						if !errors.As(err, &moved) && !errors.Is(err, fsm.ErrUnknownOutcome) {
							t.Fatalf("write on named leader: %v", err)
						}
						t.Logf("shard %d: leader %s changed during the write: %v", s, l.ID(), err)
					}
				}
				if ctx.Err() != nil {
					t.Fatalf("node %s never named shard %d's leader (last %+v)", n.ID(), s, nl)
				}
				time.Sleep(50 * time.Millisecond)
			}
			checked++
		}
	}
	if checked != 10 {
		t.Fatalf("checked %d non-local (node, shard) pairs, want 10", checked)
	}
	// Every shard has 3 replicas and, once any hand-off or election in
	// progress settles, a known leader.
	top := tc.nodes[0].Topology()
	for deadline := time.Now().Add(10 * time.Second); ; top = tc.nodes[0].Topology() {
		settled := true
		for i, s := range top.Shards {
			if len(s.Replicas) != 3 {
				t.Fatalf("shard %d: %+v", i, s)
			}
			settled = settled && s.Leader != ""
		}
		if settled {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a shard has no known leader for 10s: %+v", top.Shards)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, ni := range top.Nodes {
		if !ni.Up {
			t.Fatalf("node %s reported down", ni.ID)
		}
	}
}

// waitControllers waits until the controller is seeded and every live
// node has adopted its Membership (controller voters from their own
// replica).
func waitControllers(t *testing.T, tc *testCluster, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		ok := true
		var any *Membership
		for _, n := range tc.nodes {
			if n != nil && n.ControllerMembers() != nil {
				any = n.ControllerMembers()
			}
		}
		for _, n := range tc.nodes {
			if n == nil {
				continue
			}
			// Adopted: same nodes and replica sets, Ctrl = the
			// controller's Epoch (the local Epoch runs ahead of it).
			got := n.ControllerMembers()
			if got == nil {
				got = any
			}
			want := n.st.Load().members
			if got == nil || want.Ctrl != got.Epoch || fmt.Sprint(got.Nodes, got.Shards) != fmt.Sprint(want.Nodes, want.Shards) {
				ok = false
			}
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("controller replicas do not hold the formed membership")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestThreeNodesFailoverWithoutHandOff: a node stops without handing its
// leaderships over (as in a crash); the other two elect new leaders and
// every shard takes writes again.
func TestThreeNodesFailoverWithoutHandOff(t *testing.T) {
	tc := startCluster(t, 3, 8)
	ctx, cancel := context.WithTimeout(context.Background(), workBudget)
	defer cancel()
	for s := 0; s < 8; s++ {
		if err := tc.submitFollowing(ctx, s, 1); err != nil {
			t.Fatal(err)
		}
	}
	victim := tc.nodes[0].Topology().Shards[0].Leader
	led := 0
	for i, n := range tc.nodes {
		if n.ID() == victim {
			for s := 0; s < 8; s++ {
				if st, _ := n.ShardStatus(s); st.Role == "leader" {
					led++
				}
			}
			if err := n.close(false); err != nil {
				t.Fatal(err)
			}
			tc.nodes[i] = nil
		}
	}
	start := time.Now()
	// The two survivors elect a leader for every shard the victim led.
	elected := waitAllLedN(t, tc, 8, 90*time.Second)
	for s := 0; s < 8; s++ {
		if err := tc.submitFollowing(ctx, s, 2); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("victim led %d of 8 shards; every shard led again after %v, all writable after %v", led, elected, time.Since(start))
}

// TestRestartOnNewAddresses: a node restarts with another RESP port and
// another bus port; the others learn the new addresses from its RPCs,
// replicate to it again and announce it where it now is.
func TestRestartOnNewAddresses(t *testing.T) {
	tc := startCluster(t, 3, 2)
	ctx, cancel := context.WithTimeout(context.Background(), workBudget)
	defer cancel()
	moved := 2
	id := tc.nodes[moved].ID()
	if err := tc.nodes[moved].Close(); err != nil {
		t.Fatal(err)
	}
	tc.nodes[moved] = nil
	for s := 0; s < 2; s++ {
		if err := tc.submitFollowing(ctx, s, 40+s); err != nil {
			t.Fatal(err)
		}
	}
	cfg := tc.cfgs[moved]
	for _, n := range tc.nodes {
		if n == nil {
			continue
		}
		for { // new ports, distinct from every live address
			cfg.AnnouncePort = testkit.FreePort(t)
			cfg.BindAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(testkit.FreePort(t)))
			if cfg.AnnouncePort != n.self.Port && cfg.BindAddr != n.self.Bus && cfg.BindAddr != net.JoinHostPort("127.0.0.1", strconv.Itoa(cfg.AnnouncePort)) {
				break
			}
		}
	}
	n, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tc.nodes[moved] = n
	if n.ID() != id {
		t.Fatal("restarted node changed ID")
	}
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for s := 0; s < 2; s++ {
		if err := waitStale(ctx, n, s, 40+s); err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range tc.nodes {
		for {
			var port int
			for _, ni := range o.Topology().Nodes {
				if ni.ID == id {
					port = ni.Port
				}
			}
			if port == cfg.AnnouncePort {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("node %s still announces %s on port %d, want %d", o.ID(), id, port, cfg.AnnouncePort)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// New writes reach the moved node too.
	for s := 0; s < 2; s++ {
		if err := tc.submitFollowing(ctx, s, 50+s); err != nil {
			t.Fatal(err)
		}
		if err := waitStale(ctx, n, s, 50+s); err != nil {
			t.Fatal(err)
		}
	}
}
