package cluster

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/raftstream/raftstream/jepsen/testkit"
)

// TestFormationTransitiveAndStaggered: each node knows only the previous
// node's bus address (n0 knows n2), and the last node starts a second
// later; all three still discover each other and agree.
func TestFormationTransitiveAndStaggered(t *testing.T) {
	const size = 3
	used := map[int]bool{}
	port := func() int {
		for {
			if p := testkit.FreePort(t); !used[p] {
				used[p] = true
				return p
			}
		}
	}
	cfgs := make([]Config, size)
	for i := range cfgs {
		c := testConfig(t, t.TempDir())
		c.AnnouncePort = port()
		c.BindAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port()))
		c.AdvertiseBus = ""
		c.BootstrapExpect = size
		c.Shards = 2
		loadedTiming(&c)
		cfgs[i] = c
	}
	for i := range cfgs {
		cfgs[i].Join = []string{cfgs[(i+size-1)%size].BindAddr}
	}
	ctx, cancel := context.WithTimeout(context.Background(), formationBudget)
	defer cancel()
	nodes := formTogether(ctx, t, cfgs, time.Second)
	want := nodes[0].st.Load().members
	for _, n := range nodes {
		got := n.st.Load().members
		if got == nil || len(got.Nodes) != size {
			t.Fatalf("node %s membership %+v", n.ID(), got)
		}
		for i := range got.Nodes {
			if got.Nodes[i] != want.Nodes[i] {
				t.Fatalf("node %s disagrees: %+v vs %+v", n.ID(), got.Nodes[i], want.Nodes[i])
			}
		}
		if err := n.WaitLeaders(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// formTogether opens a node of each configuration and starts them all at
// once, the last one lastDelay later, and fails t unless every Start
// succeeds. The nodes are closed at t's cleanup.
func formTogether(ctx context.Context, t *testing.T, cfgs []Config, lastDelay time.Duration) []*Node {
	t.Helper()
	nodes := make([]*Node, len(cfgs))
	errs := make(chan error, len(cfgs))
	for i, c := range cfgs {
		n, err := Open(c)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { n.Close() })
		nodes[i] = n
		delay := time.Duration(0)
		if i == len(cfgs)-1 {
			delay = lastDelay
		}
		go func() {
			time.Sleep(delay)
			errs <- n.Start(ctx)
		}()
	}
	for range nodes {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	return nodes
}

// oneHostConfigs are the configurations of n nodes on free loopback ports
// that form one cluster (each joins all) on one host of cpus CPUs.
func oneHostConfigs(t *testing.T, n, cpus int) []Config {
	cfgs := make([]Config, n)
	var join []string
	for i := range cfgs {
		c := testConfig(t, t.TempDir())
		c.AnnouncePort = testkit.FreePort(t)
		c.BindAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(testkit.FreePort(t)))
		c.AdvertiseBus = ""
		c.BootstrapExpect = n
		c.HostID, c.HostCPUs = "one-host", cpus
		cfgs[i] = c
		join = append(join, c.BindAddr)
	}
	for i := range cfgs {
		cfgs[i].Join = join
	}
	return cfgs
}

// TestFormationFitsTheHosts: three nodes formed without a shard count
// fit it to their hosts. On one 2-CPU host they form one shard, every
// node agreeing, with the count persisted (a restarted node reopens with
// it) and a policy that keeps fitting; on one 6-CPU host, or with a shard
// count given, three.
func TestFormationFitsTheHosts(t *testing.T) {
	for _, tc := range []struct {
		name         string
		cpus, shards int
		want         int
		fit          bool
	}{
		{"one 2-CPU host", 2, 0, 1, true},
		{"one 6-CPU host", 6, 0, 3, true},
		{"one 2-CPU host, --shards 3", 2, 3, 3, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfgs := oneHostConfigs(t, 3, tc.cpus)
			for i := range cfgs {
				cfgs[i].Shards = tc.shards
				loadedTiming(&cfgs[i])
			}
			ctx, cancel := context.WithTimeout(context.Background(), formationBudget)
			defer cancel()
			nodes := formTogether(ctx, t, cfgs, 0)
			for _, n := range nodes {
				m := n.st.Load().members
				if got := len(m.Shards); got != tc.want || n.NumShards() != tc.want || n.formedShards() != tc.want {
					t.Fatalf("node %s: %d shards in its membership, %d in use, formed with %d; want %d",
						n.ID(), got, n.NumShards(), n.formedShards(), tc.want)
				}
				if m.Policy == nil || m.Policy.FitHosts != tc.fit {
					t.Fatalf("node %s: policy %+v, want fit-hosts %v", n.ID(), m.Policy, tc.fit)
				}
				if err := n.WaitLeaders(ctx); err != nil {
					t.Fatal(err)
				}
			}
			n0 := nodes[0]
			n0.Close()
			re, err := Open(cfgs[0])
			if err != nil {
				t.Fatal(err)
			}
			defer re.Close()
			if got := re.formedShards(); got != tc.want {
				t.Fatalf("reopened with %d shards, want %d", got, tc.want)
			}
		})
	}
}

// TestFormationWaitsForAnAdoptingPeer: a forming node that meets a peer
// which took a formed cluster's shard count, but has not yet adopted its
// Membership, asks again instead of failing on the differing counts. The
// peer (n0) is held in that state while n1 and n2 form; all three end
// with the fitted count.
func TestFormationWaitsForAnAdoptingPeer(t *testing.T) {
	cfgs := oneHostConfigs(t, 3, 2)
	for i := range cfgs {
		loadedTiming(&cfgs[i])
	}
	ctx, cancel := context.WithTimeout(context.Background(), formationBudget)
	defer cancel()
	nodes := make([]*Node, len(cfgs))
	for i := range cfgs {
		n, err := Open(cfgs[i])
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { n.Close() })
		nodes[i] = n
	}
	// n0 as it is between taking a formed cluster's count and publishing
	// the cluster's Membership (form, then Start's setMembers).
	n0 := nodes[0]
	n0.metaMu.Lock()
	n0.nShards.Store(1)
	n0.meta.Shards, n0.adopted = 1, true
	n0.metaMu.Unlock()
	errs := make(chan error, 2)
	for _, n := range nodes[1:] {
		go func() { errs <- n.Start(ctx) }()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if err := n0.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if got := n.NumShards(); got != 1 {
			t.Fatalf("node %s: %d shards, want 1", n.ID(), got)
		}
		if err := n.WaitLeaders(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// TestFormationRefusesMixedShardCounts: a node given --shards does not
// form a cluster with one that fits its count to the hosts, even when
// the counts agree before the fit: the two could form different clusters.
func TestFormationRefusesMixedShardCounts(t *testing.T) {
	cfgs := oneHostConfigs(t, 2, 2)
	cfgs[0].Shards = 2 // what the other's default would be before the fit
	ctx, cancel := context.WithTimeout(context.Background(), formationBudget)
	defer cancel()
	errs := make(chan error, len(cfgs))
	for i := range cfgs {
		n, err := Open(cfgs[i])
		if err != nil {
			t.Fatal(err)
		}
		defer n.Close()
		go func() { errs <- n.Start(ctx) }()
	}
	for range cfgs {
		if err := <-errs; err == nil || !strings.Contains(err.Error(), "give every node the same --shards") {
			t.Fatalf("Start = %v, want the mixed shard counts refused", err)
		}
	}
}

// TestFormationTimesOut: with BootstrapExpect 2 and the peer never
// started, Start fails when its context ends and nothing is bootstrapped.
func TestFormationTimesOut(t *testing.T) {
	c := testConfig(t, t.TempDir())
	c.BootstrapExpect = 2
	c.Join = []string{net.JoinHostPort("127.0.0.1", strconv.Itoa(testkit.FreePort(t)))}
	n, err := Open(c)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if err := n.Start(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Start = %v, want deadline exceeded", err)
	}
	if n.st.Load().members != nil {
		t.Fatal("membership recorded without formation")
	}
}

// TestCloseDuringFormation: Close while Start waits for peers makes Start
// fail promptly, and a closed node cannot be started.
func TestCloseDuringFormation(t *testing.T) {
	c := testConfig(t, t.TempDir())
	c.BootstrapExpect = 2
	c.Join = []string{net.JoinHostPort("127.0.0.1", strconv.Itoa(testkit.FreePort(t)))}
	n, err := Open(c)
	if err != nil {
		t.Fatal(err)
	}
	res := make(chan error, 1)
	go func() { res <- n.Start(context.Background()) }()
	time.Sleep(200 * time.Millisecond)
	done := make(chan struct{})
	go func() { n.Close(); close(done) }()
	select {
	case err := <-res:
		if err == nil {
			t.Fatal("Start succeeded without peers")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Start did not return after Close")
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return")
	}
	if err := n.Start(context.Background()); err == nil {
		t.Fatal("Start after Close succeeded")
	}
}
