package main

import (
	"bytes"
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raftstream/raftstream/jepsen/testkit"
	"github.com/redis/go-redis/v9"
)

// billingStream starts a redis-server with the stream orders:{0} and its
// group billing, created at $; it returns a client (closed at cleanup) and
// the stream.
func billingStream(t *testing.T) (*redis.Client, string) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: testkit.StartRedis(t), DisableIdentity: true})
	t.Cleanup(func() { _ = c.Close() })
	key := streamKey("orders", 0)
	if err := c.XGroupCreateMkStream(context.Background(), key, "billing", "$").Err(); err != nil {
		t.Fatal(err)
	}
	return c, key
}

// TestReaderClaimsStaleEntries: entries delivered to a consumer that died
// without XACK are taken over by XAUTOCLAIM, processed as claimed
// deliveries and acknowledged, leaving the PEL empty.
func TestReaderClaimsStaleEntries(t *testing.T) {
	ctx := context.Background()
	c, key := billingStream(t)
	var want []string
	for seq := uint64(1); seq <= 3; seq++ {
		id := c.XAdd(ctx, &redis.XAddArgs{Stream: key, Values: []string{"order_id", orderID("run1", newOrderKey(0, seq)), "ts_ns", "1"}}).Val()
		want = append(want, id)
	}
	// An entry of another run is acknowledged too, but not counted as ours.
	c.XAdd(ctx, &redis.XAddArgs{Stream: key, Values: []string{"order_id", "old-0-1"}})
	if n := len(c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "billing", Consumer: "dead", Streams: []string{key, ">"}, Count: 10, Block: -1}).Val()[0].Messages); n != 4 {
		t.Fatalf("dead consumer read %d entries", n)
	}

	cfg := DefaultConfig()
	cfg.MinIdle = 20 * time.Millisecond
	cfg.Verify = true
	st := NewStats(1, time.Now())
	r := &reader{cfg: &cfg, run: "run1", group: "billing", consumer: "alive", keys: []string{key},
		partOf: map[string]int32{key: 0}, client: c, stats: st.Shard(0), errs: &errorLog{}}
	deadline := time.Now().Add(5 * time.Second)
	claimed := 0
	for claimed == 0 && time.Now().Before(deadline) {
		claimed = r.claim(ctx) // nothing until the entries are 20ms idle
		if claimed == 0 {
			time.Sleep(10 * time.Millisecond)
		}
	}
	if claimed != 4 || len(r.log) != 1 || !r.log[0].Claimed || len(r.log[0].Entries) != 3 {
		t.Fatalf("claimed %d, recorded %+v (errors %v)", claimed, r.log, r.errs.Summary())
	}
	for i, d := range r.log[0].Entries {
		if d.ID.String() != want[i] || d.Key != newOrderKey(0, uint64(i+1)) {
			t.Errorf("delivery %d: %+v, want %s", i, d, want[i])
		}
	}
	if p := c.XPending(ctx, key, "billing").Val(); p.Count != 0 {
		t.Fatalf("PEL not empty after claim: %+v", p)
	}
	if !r.nothingPending(ctx) {
		t.Fatalf("nothingPending false with empty PEL")
	}
	tot := st.Harvest(time.Now())
	if st.total.msgs[0] != 3 || st.total.foreign[0] != 1 || st.total.ops[opXAutoClaim] == 0 || tot.ConsumedPerSec[0] <= 0 {
		t.Fatalf("stats: msgs %d foreign %d claims %d", st.total.msgs[0], st.total.foreign[0], st.total.ops[opXAutoClaim])
	}
}

// TestReaderKeepsOnlyDrainReads: an empty read shows a group drained only
// once production is over (later orders could still come before that), so
// -verify keeps the empty reads of the drain and none before it.
func TestReaderKeepsOnlyDrainReads(t *testing.T) {
	ctx := context.Background()
	c, key := billingStream(t)
	cfg := DefaultConfig()
	cfg.Verify = true
	cfg.Block = 10 * time.Millisecond
	st := NewStats(1, time.Now())
	r := &reader{cfg: &cfg, run: "run1", group: "billing", consumer: "c", keys: []string{key},
		partOf: map[string]int32{key: 0}, client: c, stats: st.Shard(0), errs: &errorLog{}, epoch: time.Now()}
	var draining atomic.Bool
	pctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	r.loop(pctx, &draining) // production: empty reads until ctx ends
	cancel()
	if len(r.log) != 0 {
		t.Fatalf("empty reads during production recorded: %+v", r.log)
	}
	draining.Store(true)
	r.loop(ctx, &draining) // returns once drained
	if len(r.log) != 1 || r.log[0].Claimed || len(r.log[0].Entries) != 0 || r.log[0].Return < r.log[0].Call {
		t.Fatalf("drain read: %+v (errors %v)", r.log, r.errs.Summary())
	}
}

// TestRunClusterModeVerified runs the workload with the cluster client
// against a one-node Redis Cluster holding every slot: each partition is
// routed by its hash tag and read by its own reader.
func TestRunClusterModeVerified(t *testing.T) {
	addr := testkit.StartRedis(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf")
	conn, err := testkit.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if r, err := conn.Do("CLUSTER", "ADDSLOTSRANGE", "0", "16383"); err != nil || string(r) != "+OK\r\n" {
		t.Fatalf("addslots: %q %v", r, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		r, err := conn.Do("CLUSTER", "INFO")
		if err == nil && bytes.Contains(r, []byte("cluster_state:ok")) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("cluster not ok: %q %v", r, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	cfg := DefaultConfig()
	cfg.Addrs = []string{addr}
	cfg.Cluster = true
	cfg.Protocol = 2 // the other test speaks RESP3
	cfg.Partitions = 4
	cfg.Producers = 2
	cfg.Consumers = 2
	cfg.Pipeline = 8
	cfg.Duration = 0
	cfg.Count = 2000
	cfg.MaxLen = 100000
	cfg.Block = 50 * time.Millisecond
	cfg.Verify = true
	cfg.Progress = false
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := run(ctx, cfg, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	out := stdout.String()
	t.Logf("stdout:\n%s", out)
	if !strings.Contains(out, "produced 2000 orders") || !strings.Contains(out, "verify OK: 2000 acknowledged") {
		t.Fatalf("unexpected report:\n%s", out)
	}
}

// TestParseFlags maps flags onto Config and rejects invalid values by field.
func TestParseFlags(t *testing.T) {
	var stderr bytes.Buffer
	c, err := ParseFlags([]string{"--addr", "a:1, b:2", "--cluster", "--partitions", "8", "-P", "16",
		"--groups", "x,y,z", "--count", "100", "--maxlen", "1000", "--verify", "--seed", "9"}, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Addrs) != 2 || c.Addrs[1] != "b:2" || !c.Cluster || c.Partitions != 8 || c.Pipeline != 16 ||
		len(c.Groups) != 3 || c.Count != 100 || c.Duration != 0 || c.MaxLen != 1000 || !c.Verify || c.Seed != 9 {
		t.Fatalf("parsed %+v", c)
	}
	if c, err := ParseFlags([]string{"--count", "5", "--duration", "3s"}, &stderr); err != nil || c.Duration != 3*time.Second {
		t.Fatalf("explicit duration with count: %v %v", c.Duration, err)
	}
	if c, err := ParseFlags(nil, &stderr); err != nil || c.Duration != 10*time.Second || c.Count != 0 || c.Producers != 50 {
		t.Fatalf("defaults: %+v %v", c, err)
	}
	for _, bad := range [][]string{
		{"--partitions", "0"}, {"--duration", "0"}, {"--groups", "a,a"}, {"--block", "0s"},
		{"--protocol", "4"}, {"--prefix", "o{x}"}, {"--consumers", "0", "--verify"}, {"extra"},
	} {
		if _, err := ParseFlags(bad, &stderr); err == nil {
			t.Errorf("ParseFlags(%q) accepted", bad)
		}
	}
}

// TestQuotaAndRouting: the count budget is handed out exactly, and order
// routing is stable and covers every partition.
func TestQuotaAndRouting(t *testing.T) {
	q := &quota{limit: 10}
	got := 0
	for range 10 {
		got += q.take(4)
	}
	if got != 10 {
		t.Fatalf("quota handed out %d of 10", got)
	}
	seen := map[int]int{}
	for i := range 1600 {
		id := orderID("r", newOrderKey(i%50, uint64(i)))
		p := partitionOf(id, 16)
		if p != partitionOf(id, 16) || p < 0 || p >= 16 {
			t.Fatalf("partitionOf(%q) = %d", id, p)
		}
		seen[p]++
	}
	for p := range 16 {
		if seen[p] < 50 { // 100 expected per partition
			t.Errorf("partition %d got %d of 1600 orders", p, seen[p])
		}
	}
	if k := streamKey("orders", 3); k != "orders:{3}" {
		t.Fatalf("streamKey = %q", k)
	}
}
