package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/raftstream/raftstream/jepsen/testkit"
)

// TestCoLocatedNodesShareTheCPUs: the nodes of a cluster that gossip finds
// on one host (by default the kernel's boot ID, which these processes
// share) count each other in INFO's colocated_nodes and run with
// GOMAXPROCS = ⌈CPUs / colocated_nodes⌉, at most one per shard replica
// hosted; a node given another --host-id counts itself alone. Once its
// co-located peer is killed, a node takes its whole share back.
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
	procs := func(colocated, hosted int) int { return min((full+colocated-1)/colocated, max(1, hosted)) }
	if os.Getenv("GOMAXPROCS") != "" || full < runtime.NumCPU() {
		procs = func(int, int) int { return full }
	}
	want := func(nd *testkit.Node, colocated int) {
		t.Helper()
		var got string
		for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
			c, p := infoField(t, nd.Addr, "server", "colocated_nodes"), infoField(t, nd.Addr, "server", "go_maxprocs")
			h := infoField(t, nd.Addr, "raft", "raft_shards_hosted")
			got = fmt.Sprintf("colocated_nodes %d, go_maxprocs %d, raft_shards_hosted %d", c, p, h)
			if h == 3 && c == int64(colocated) && p == int64(procs(colocated, 3)) {
				return
			}
		}
		t.Fatalf("%s: %s, want colocated_nodes %d, go_maxprocs %d, raft_shards_hosted 3 (%d CPUs)",
			nd.Name, got, colocated, procs(colocated, 3), full)
	}
	want(nodes[0], 2)
	want(nodes[1], 2)
	want(nodes[2], 1)

	nodes[1].Kill()
	want(nodes[0], 1)
	want(nodes[2], 1)
}

// TestOneNodeRunsOnePPerShard: a node alone runs with one P per shard it
// hosts, within the CPUs: one for the default single node's one shard.
func TestOneNodeRunsOnePPerShard(t *testing.T) {
	// The nodes run without GOMAXPROCS in their environment, as a server
	// does by default; full is the runtime's default then.
	t.Setenv("GOMAXPROCS", "")
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	runtime.SetDefaultGOMAXPROCS()
	full := runtime.GOMAXPROCS(0)
	for _, shards := range []int{1, 2} {
		want := min(full, shards)
		if full < runtime.NumCPU() {
			want = full // a CPU limit: the runtime's own setting stays
		}
		nd := testkit.StartNode(t, "", "--shards", strconv.Itoa(shards), "--log-level", "error")
		var got int64
		for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
			if got = infoField(t, nd.Addr, "server", "go_maxprocs"); got == int64(want) {
				break
			}
		}
		if got != int64(want) {
			t.Errorf("one node with %d shards on %d CPUs: go_maxprocs %d, want %d", shards, full, got, want)
		}
		nd.Kill()
	}
}

// TestCPUShareRules: GOMAXPROCS in the environment turns the policy off;
// otherwise a node gets ⌈CPUs / co-located nodes⌉, at most one per shard
// replica hosted and at least one, and the runtime's default when that is
// all the CPUs.
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
	c := &cpuShare{log: log, full: 5, colocated: 1}
	for _, tc := range []struct{ colocated, hosted, want int }{
		{2, 8, 3}, {3, 8, 2}, {5, 8, 1}, {8, 8, 1}, {2, 2, 2}, {1, 0, 1}, {1, 1, 1}, {1, 4, 4}, {3, 1, 1},
	} {
		c.setHosted(tc.hosted)
		c.setCoLocated(tc.colocated)
		if got := runtime.GOMAXPROCS(0); got != tc.want {
			t.Errorf("%d nodes on 5 CPUs, %d shards hosted: GOMAXPROCS %d, want %d", tc.colocated, tc.hosted, got, tc.want)
		}
	}
	c.setHosted(5)
	c.setCoLocated(1)
	if got := runtime.GOMAXPROCS(0); got != def {
		t.Errorf("alone with 5 shards on 5 CPUs: GOMAXPROCS %d, want the runtime's default %d", got, def)
	}
	if hostID("none") != "" || hostID("h1") != "h1" {
		t.Errorf("hostID: none gave %q, h1 gave %q", hostID("none"), hostID("h1"))
	}
}
