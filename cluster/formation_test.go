package cluster

import (
	"context"
	"errors"
	"net"
	"strconv"
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
	nodes := make([]*Node, size)
	errs := make(chan error, size)
	for i, c := range cfgs {
		n, err := Open(c)
		if err != nil {
			t.Fatal(err)
		}
		defer n.Close()
		nodes[i] = n
		delay := time.Duration(0)
		if i == size-1 {
			delay = time.Second
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
