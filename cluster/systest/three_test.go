package systest

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/raftstream/raftstream/slots"
)

// TestSystemThreeNodes: a 3-node, 16-shard cluster of real processes.
// Leadership settles at 5 or 6 shards per node (issue point 5e); redis-cli
// -c writes orders:{0}…orders:{15} through one node following MOVED;
// CLUSTER SLOTS and CLUSTER SHARDS cover all 16384 slots; a go-redis
// ClusterClient and redis-benchmark --cluster run XADD across every shard
// without an error (5a).
func TestSystemThreeNodes(t *testing.T) {
	t0 := time.Now()
	c := startCluster(t, 3, 16)
	t.Logf("3 nodes formed, all slots covered in %v", time.Since(t0))
	cl := client(c.procs[0])
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()

	// 5e: 5 or 6 leaders per node once stable.
	deadline := time.Now().Add(60 * time.Second)
	for {
		count, _, err := leaders(ctx, cl)
		ok := err == nil && len(count) == 3
		for _, n := range count {
			ok = ok && (n == 5 || n == 6)
		}
		if ok {
			t.Logf("leaders per node %v after %v", values(count), time.Since(t0))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("leaders per node never settled at 5/6: %v (%v)", count, err)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// redis-cli -c through node 0.
	for i := 0; i < 16; i++ {
		out, err := exec.CommandContext(ctx, "redis-cli", "-c", "-p", strconv.Itoa(c.procs[0].Port),
			"XADD", fmt.Sprintf("orders:{%d}", i), "*", "item", strconv.Itoa(i)).CombinedOutput()
		s := strings.TrimSpace(string(out))
		if err != nil || !strings.Contains(s, "-") || strings.Contains(strings.ToUpper(s), "ERR") || strings.Contains(s, "MOVED") {
			t.Fatalf("redis-cli -c XADD orders:{%d}: %q, %v", i, s, err)
		}
	}
	for i := 0; i < 16; i++ {
		out, err := exec.CommandContext(ctx, "redis-cli", "-c", "-p", strconv.Itoa(c.procs[1].Port),
			"XLEN", fmt.Sprintf("orders:{%d}", i)).CombinedOutput()
		if s := strings.TrimSpace(string(out)); err != nil || s != "1" {
			t.Fatalf("redis-cli -c XLEN orders:{%d} via node 1: %q, %v", i, s, err)
		}
	}

	// CLUSTER SLOTS and CLUSTER SHARDS cover every slot exactly once.
	for _, p := range c.procs {
		pc := client(p)
		ss, err := pc.ClusterSlots(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		seen := make([]bool, slots.Count)
		for _, s := range ss {
			for k := s.Start; k <= s.End; k++ {
				if seen[k] {
					t.Fatalf("%s: CLUSTER SLOTS lists slot %d twice", p.Name, k)
				}
				seen[k] = true
			}
		}
		sh, err := pc.ClusterShards(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, s := range sh {
			for _, r := range s.Slots {
				n += int(r.End - r.Start + 1)
			}
		}
		pc.Close()
		if len(ss) == 0 || slicesCount(seen) != slots.Count || n != slots.Count {
			t.Fatalf("%s: CLUSTER SLOTS covers %d slots, CLUSTER SHARDS %d", p.Name, slicesCount(seen), n)
		}
	}

	// go-redis ClusterClient: XADD to one stream per shard, 20 rounds.
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{c.procs[0].Addr}, MaxRedirects: 8})
	defer cc.Close()
	keys := keyPerShard("cc:", 16)
	t1 := time.Now()
	for round := 0; round < 20; round++ {
		for _, k := range keys {
			if err := cc.XAdd(ctx, &redis.XAddArgs{Stream: k, Values: []string{"r", strconv.Itoa(round)}}).Err(); err != nil {
				t.Fatalf("ClusterClient XADD %s: %v", k, err)
			}
		}
	}
	for _, k := range keys {
		if n, err := cc.XLen(ctx, k).Result(); err != nil || n != 20 {
			t.Fatalf("ClusterClient XLEN %s = %d, %v", k, n, err)
		}
	}
	t.Logf("go-redis ClusterClient: 320 XADD over 16 shards in %v", time.Since(t1))

	// redis-benchmark --cluster: {tag} is replaced per node with a tag of
	// a slot that node serves.
	out, err := exec.CommandContext(ctx, "redis-benchmark", "--cluster", "-h", "127.0.0.1", "-p", strconv.Itoa(c.procs[0].Port),
		"-n", "3000", "-c", "12", "-q", "XADD", "bench:{tag}", "*", "f", "v").CombinedOutput()
	s := string(out)
	if err != nil || strings.Contains(strings.ToLower(s), "error") || !strings.Contains(s, "requests per second") {
		t.Fatalf("redis-benchmark --cluster: %v\n%s", err, s)
	}
	t.Logf("redis-benchmark --cluster XADD: %s", lastLine(s))
}

func values(m map[string]int) []int {
	var out []int
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

func slicesCount(b []bool) int {
	n := 0
	for _, x := range b {
		if x {
			n++
		}
	}
	return n
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(strings.ReplaceAll(s, "\r", "\n")), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
