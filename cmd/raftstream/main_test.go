package main

import (
	"strconv"
	"testing"
	"time"

	"github.com/raftstream/raftstream/jepsen/testkit"
)

// TestMain builds the server once for the whole run (testkit.Server), with
// -race when the tests run with -race.
func TestMain(m *testing.M) { testkit.Main(m, testkit.Race) }

// startNode starts raftstream on free loopback ports with a fresh data
// directory (or dir, when given), logging at warn unless extra says
// otherwise, and waits until it answers. The process is killed by PID at
// cleanup, even when the test fails.
func startNode(t testing.TB, dir string, extra ...string) *testkit.Node {
	t.Helper()
	return testkit.StartNode(t, dir, append([]string{"--log-level", "warn"}, extra...)...)
}

// clusterArgs are the flags of every node of a test cluster of shards
// shards (quick elections, errors only in the log), then extra.
func clusterArgs(shards int, extra ...string) []string {
	return append([]string{"--shards", strconv.Itoa(shards), "--log-level", "error",
		"--raft-heartbeat-timeout", "300ms", "--raft-election-timeout", "300ms"}, extra...)
}

// startCluster starts n raftstream processes forming one cluster with the
// given shard count and waits until every one answers. Every process is
// killed by PID at cleanup.
func startCluster(t *testing.T, n, shards int, extra ...string) []*testkit.Node {
	t.Helper()
	return testkit.StartCluster(t, n, clusterArgs(shards, extra...)...)
}

// addrsOf lists the nodes' RESP addresses.
func addrsOf(nodes []*testkit.Node) []string {
	addrs := make([]string, len(nodes))
	for i, n := range nodes {
		addrs[i] = n.Addr
	}
	return addrs
}

// stopTimeout is how long a node may take to exit on SIGTERM.
const stopTimeout = 20 * time.Second

func dial(t testing.TB, addr string) *testkit.Conn {
	t.Helper()
	c, err := testkit.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func do(t testing.TB, c *testkit.Conn, args ...string) string {
	t.Helper()
	r, err := c.Do(args...)
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return string(r)
}
