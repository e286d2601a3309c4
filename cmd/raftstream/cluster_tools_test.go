package main

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/raftstream/raftstream/resp/wire"
)

// clusterTool runs redis-cli --cluster sub addr until it exits 0 (the
// nodes may need a moment to agree after a change), bounded by d, and
// returns its last output. It fails the test if it never does.
func clusterTool(t *testing.T, sub, addr string, d time.Duration) string {
	t.Helper()
	start := time.Now()
	var out []byte
	var err error
	for tries := 1; ; tries++ {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		out, err = exec.CommandContext(ctx, "redis-cli", "--cluster", sub, addr).CombinedOutput()
		cancel()
		if err == nil {
			t.Logf("redis-cli --cluster %s %s: exit 0 after %d tries, %v", sub, addr, tries, time.Since(start).Round(time.Millisecond))
			return string(out)
		}
		if time.Since(start) > d {
			t.Fatalf("redis-cli --cluster %s %s: %v after %d tries:\n%s", sub, addr, err, tries, out)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// checkCluster runs redis-cli --cluster check and info against addr and
// requires what the checker reports on a healthy cluster: every node
// agrees on who serves which slot, no open slot, all 16384 slots covered,
// and one master line per reachable node.
func checkCluster(t *testing.T, addr string, masters int) {
	t.Helper()
	out := clusterTool(t, "check", addr, 90*time.Second)
	for _, want := range []string{"[OK] All nodes agree about slots configuration.", "[OK] All 16384 slots covered."} {
		if !strings.Contains(out, want) {
			t.Errorf("check %s lacks %q:\n%s", addr, want, out)
		}
	}
	if strings.Contains(out, "[WARNING]") || strings.Contains(out, "[ERR]") {
		t.Errorf("check %s warns:\n%s", addr, out)
	}
	// info exits 0 even when a node answers an error, such as TRYAGAIN
	// while one of its shards moves its leadership (the balancer does so
	// after a restart): a master missing from one snapshot is asked again.
	want := fmt.Sprintf("keys in %d masters.", masters)
	deadline := time.Now().Add(30 * time.Second)
	info := clusterTool(t, "info", addr, 30*time.Second)
	for !strings.Contains(info, want) && time.Now().Before(deadline) {
		time.Sleep(500 * time.Millisecond)
		info = clusterTool(t, "info", addr, 30*time.Second)
	}
	if !strings.Contains(info, want) {
		t.Errorf("info %s: want %d masters:\n%s", addr, masters, info)
	}
}

// TestRedisCLIClusterCheck: `redis-cli --cluster check` and `info` exit 0
// on 3- and 5-node clusters, also while a node is down and after it is
// started again (asked from a surviving node and from the restarted one).
func TestRedisCLIClusterCheck(t *testing.T) {
	if _, err := exec.LookPath("redis-cli"); err != nil {
		t.Fatalf("redis-cli: %v", err)
	}
	for _, n := range []int{3, 5} {
		t.Run(fmt.Sprintf("%d-nodes", n), func(t *testing.T) {
			nodes := startCluster(t, n, 2*n)
			c := dial(t, nodes[0].Addr)
			for i := 0; i < 20; i++ {
				key := fmt.Sprintf("{tool%d}", i)
				r := do(t, c, "XADD", key, "*", "f", "v")
				if strings.HasPrefix(r, "-MOVED ") {
					addr := strings.Fields(r)[2]
					do(t, dial(t, addr), "XADD", key, "*", "f", "v")
				}
			}
			checkCluster(t, nodes[0].Addr, n)
			checkTopologyReplies(t, nodes[0].Addr, n)
			victim := nodes[n-1]
			victim.Kill()
			checkCluster(t, nodes[0].Addr, n-1)
			victim.Start()
			checkCluster(t, nodes[0].Addr, n)
			checkCluster(t, victim.Addr, n)
		})
	}
}

// checkTopologyReplies: CLUSTER SLOTS lists every shard's leader and its
// followers (three replicas each, the default replication factor), CLUSTER
// LINKS a link to and from every other node, with a creation time.
func checkTopologyReplies(t *testing.T, addr string, nodes int) {
	t.Helper()
	c := dial(t, addr)
	v, err := wire.Parse([]byte(do(t, c, "CLUSTER", "SLOTS")))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range v.([]any) {
		if row := r.([]any); len(row)-2 != 3 {
			t.Errorf("CLUSTER SLOTS range %v-%v has %d nodes, want the leader and 2 followers", row[0], row[1], len(row)-2)
		}
	}
	// Links appear as the health poller hears from each member.
	var links string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		links = do(t, c, "CLUSTER", "LINKS")
		if strings.Count(links, "$9\r\ndirection\r\n") == 2*(nodes-1) || time.Now().After(deadline) {
			break
		}
	}
	if n := strings.Count(links, "$9\r\ndirection\r\n"); n != 2*(nodes-1) {
		t.Errorf("CLUSTER LINKS has %d links, want %d: %q", n, 2*(nodes-1), links)
	}
	if strings.Contains(links, "create-time\r\n:0\r\n") {
		t.Errorf("CLUSTER LINKS without a creation time: %q", links)
	}
	if got := do(t, c, "CLUSTER", "MYSHARDID"); !strings.HasPrefix(got, "$40\r\n") {
		t.Errorf("CLUSTER MYSHARDID: %q", got)
	}
}
