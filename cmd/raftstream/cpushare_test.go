package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/raftstream/raftstream/jepsen/testkit"
)

// TestCoLocatedNodesShareTheCPUs: the nodes of a cluster that gossip finds
// on one host (by default the kernel's boot ID, which these processes
// share) count each other in INFO's colocated_nodes and run with
// GOMAXPROCS = ⌈CPUs / colocated_nodes⌉; a node given another --host-id
// counts itself alone and keeps every CPU. Once its co-located peer is
// killed, a node takes every CPU back.
func TestCoLocatedNodesShareTheCPUs(t *testing.T) {
	if hostID("") == "" {
		t.Fatal("no boot ID in /proc/sys/kernel/random/boot_id")
	}
	nodes := testkit.NewCluster(t, 3, clusterArgs(3)...)
	for _, nd := range nodes[:2] {
		nd.Args = append(nd.Args, "--host-id", "") // the boot ID (NewCluster gives each its own)
	}
	nodes[2].Args = append(nodes[2].Args, "--host-id", "another-machine")
	testkit.StartAll(t, nodes...)

	// The nodes inherit this process's environment and CPU limit, so the
	// runtime's default is the same here and there.
	full := runtime.GOMAXPROCS(0)
	split := func(n int) int { return (full + n - 1) / n }
	if os.Getenv("GOMAXPROCS") != "" || full < runtime.NumCPU() {
		split = func(int) int { return full }
	}
	want := func(nd *testkit.Node, colocated, procs int) {
		t.Helper()
		var got string
		for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
			c, p := infoField(t, nd.Addr, "server", "colocated_nodes"), infoField(t, nd.Addr, "server", "go_maxprocs")
			got = fmt.Sprintf("colocated_nodes %d, go_maxprocs %d", c, p)
			if c == int64(colocated) && p == int64(procs) {
				return
			}
		}
		t.Fatalf("%s: %s, want colocated_nodes %d, go_maxprocs %d (%d CPUs)", nd.Name, got, colocated, procs, full)
	}
	want(nodes[0], 2, split(2))
	want(nodes[1], 2, split(2))
	want(nodes[2], 1, full)

	nodes[1].Kill()
	want(nodes[0], 1, full)
	want(nodes[2], 1, full)
}

// TestCPUShareRules: GOMAXPROCS in the environment turns the policy off;
// otherwise n nodes on the host get ⌈CPUs / n⌉ each, and one alone gets
// the runtime's default back.
func TestCPUShareRules(t *testing.T) {
	defer runtime.SetDefaultGOMAXPROCS()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	t.Setenv("GOMAXPROCS", "1")
	if newCPUShare(log) != nil {
		t.Fatal("the policy ran with GOMAXPROCS set in the environment")
	}
	os.Unsetenv("GOMAXPROCS")
	runtime.SetDefaultGOMAXPROCS()
	def := runtime.GOMAXPROCS(0)
	c := &cpuShare{log: log, full: 5}
	for _, tc := range []struct{ n, want int }{{2, 3}, {3, 2}, {5, 1}, {8, 1}, {1, def}} {
		c.set(tc.n)
		if got := runtime.GOMAXPROCS(0); got != tc.want {
			t.Errorf("%d nodes on 5 CPUs: GOMAXPROCS %d, want %d", tc.n, got, tc.want)
		}
	}
	if hostID("none") != "" || hostID("h1") != "h1" {
		t.Errorf("hostID: none gave %q, h1 gave %q", hostID("none"), hostID("h1"))
	}
}
