package main

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/raftstream/raftstream/jepsen/testkit"
)

// Retention policies on a real 3-node cluster (3 shards, 3 replicas each):
// set through any node, enforced by each shard's leader through the log,
// kept across a leader kill, snapshots and a restart of every node, with
// every replica holding the same streams.

const (
	retStreams = 8
	retMaxAge  = 10_000 // ms
	// nodeEntries is stream-node-max-entries (Redis's default 100): a node
	// spans the time its 100 entries took to arrive.
	nodeEntries = 100
)

// retentionList is RAFTSTREAM RETENTION LIST on addr.
func retentionList(t *testing.T, addr string) string {
	t.Helper()
	return do(t, dial(t, addr), "RAFTSTREAM", "RETENTION", "LIST")
}

// TestRetentionMaxAgeUnderLoadAcrossFailover: with MAXAGE 10000 on orders:*
// and XADD load on 8 streams spread over the shards, every stream's oldest
// entry stays within 10 s plus its node's span (plus the cycle's period and
// the sampling's own latency: the oldest node's last entry is never much
// more than 10 s old), while the leader of one shard is killed and
// restarted and every replica snapshotted. An ACKED policy never drops what
// a group has not acknowledged. Afterwards every replica holds the same
// streams (XINFO STREAM FULL via READONLY, policy field included), and the
// policies survive a restart of every node.
func TestRetentionMaxAgeUnderLoadAcrossFailover(t *testing.T) {
	redis.SetLogger(quietLogger{})
	nodes := startCluster(t, 3, 3)
	addrs := addrsOf(nodes)
	c0 := dial(t, addrs[0])
	for _, cmd := range [][]string{
		{"RAFTSTREAM", "RETENTION", "SET", "orders:*", "MAXAGE", strconv.Itoa(retMaxAge)},
		{"RAFTSTREAM", "RETENTION", "SET", "orders:acked", "MAXAGE", "500", "ACKED"},
	} {
		if r := do(t, c0, cmd...); r != "+OK\r\n" {
			t.Fatalf("%v: %q", cmd, r)
		}
	}
	list := retentionList(t, addrs[0])
	if !strings.Contains(list, "orders:*") || !strings.Contains(list, "acked") {
		t.Fatalf("RETENTION LIST: %q", list)
	}
	for _, a := range addrs[1:] {
		if got := retentionList(t, a); got != list {
			t.Fatalf("RETENTION LIST on %s: %q, on %s: %q", a, got, addrs[0], list)
		}
	}
	for _, bad := range [][]string{
		{"RAFTSTREAM", "RETENTION", "SET", "x"},
		{"RAFTSTREAM", "RETENTION", "SET", "x", "MAXLEN", "-1"},
		{"RAFTSTREAM", "RETENTION", "FOO"},
		{"RAFTSTREAM", "RETENTION"},
		{"RAFTSTREAM", "RETENTION", "SHARD", "99", "DEL", "x"},
	} {
		if r := do(t, c0, bad...); !strings.HasPrefix(r, "-ERR") {
			t.Errorf("%v: %q, want an error", bad, r)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, MaxRedirects: 8})
	defer cc.Close()
	retry := func(f func() error) error {
		var err error
		for range 100 {
			if err = f(); err == nil {
				return nil
			}
			time.Sleep(100 * time.Millisecond)
		}
		return err
	}

	// ACKED: a group reads 20 of 50 entries and acknowledges the first 10.
	acked := "orders:acked"
	if err := retry(func() error { return cc.XGroupCreateMkStream(ctx, acked, "g", "0").Err() }); err != nil {
		t.Fatal(err)
	}
	var ackedIDs []string
	for i := range 50 {
		var id string
		if err := retry(func() (err error) {
			id, err = cc.XAdd(ctx, &redis.XAddArgs{Stream: acked, ID: fmt.Sprintf("%d-1", i+1), Values: []string{"i", strconv.Itoa(i)}}).Result()
			if err != nil && strings.Contains(err.Error(), "equal or smaller") {
				err = nil
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
		ackedIDs = append(ackedIDs, id)
	}
	if err := retry(func() error {
		return cc.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: "c", Streams: []string{acked, ">"}, Count: 20}).Err()
	}); err != nil {
		t.Fatal(err)
	}
	if err := retry(func() error { return cc.XAck(ctx, acked, "g", ackedIDs[:10]...).Err() }); err != nil {
		t.Fatal(err)
	}

	// The load: one writer per stream, and a sampler of the oldest entries.
	const loadFor = 24 * time.Second
	start := time.Now()
	stop := make(chan struct{})
	var added [retStreams]atomic.Int64
	var wg sync.WaitGroup
	for i := range retStreams {
		key := fmt.Sprintf("orders:{%d}", i)
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if cc.XAdd(ctx, &redis.XAddArgs{Stream: key, Values: []string{"customer", "c", "amount", "12.50"}}).Err() == nil {
					added[i].Add(1)
				}
				time.Sleep(4 * time.Millisecond)
			}
		})
	}
	// The sampler reads each stream's first node: the first nodeEntries
	// entries (no entry is ever deleted inside a node here, and trimming
	// frees whole nodes, so they are exactly the oldest node). MINID ~
	// frees a node once its last entry is older than MAXAGE, so that
	// entry's age is what the policy bounds; the oldest entry is then at
	// most that plus the node's span older.
	var worstAge, worstLast, worstSpan atomic.Int64
	var samples atomic.Int64
	raise := func(a *atomic.Int64, v int64) {
		for w := a.Load(); v > w && !a.CompareAndSwap(w, v); w = a.Load() {
		}
	}
	idMs := func(id string) int64 {
		ms, _ := strconv.ParseInt(id[:strings.IndexByte(id, '-')], 10, 64)
		return ms
	}
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
			for i := range retStreams {
				asked := time.Now().UnixMilli() // the entries were at least this old
				r, err := cc.XRangeN(ctx, fmt.Sprintf("orders:{%d}", i), "-", "+", nodeEntries).Result()
				if err != nil || len(r) < nodeEntries {
					continue
				}
				first, last := idMs(r[0].ID), idMs(r[nodeEntries-1].ID)
				samples.Add(1)
				raise(&worstAge, asked-first)
				raise(&worstLast, asked-last)
				raise(&worstSpan, last-first)
			}
		}
	})

	// Kill the leader of orders:{0}'s shard a third of the way in, restart
	// it, then snapshot every replica.
	time.Sleep(loadFor / 3)
	leader := leaderOfKey(t, addrs, "orders:{0}")
	var killed *testkit.Node
	for _, n := range nodes {
		if n.Addr == leader {
			killed = n
		}
	}
	killed.Kill()
	time.Sleep(3 * time.Second)
	killed.Start()
	time.Sleep(2 * time.Second)
	for _, n := range nodes {
		if r := do(t, dial(t, n.Addr), "RAFTSTREAM", "SNAPSHOT"); !strings.HasPrefix(r, ":") {
			t.Fatalf("%s: RAFTSTREAM SNAPSHOT: %q", n.Name, r)
		}
	}
	time.Sleep(time.Until(start.Add(loadFor)))
	close(stop)
	wg.Wait()
	elapsed := time.Since(start)

	var total int64
	for i := range retStreams {
		total += added[i].Load()
	}
	ms := func(a *atomic.Int64) time.Duration { return time.Duration(a.Load()) * time.Millisecond }
	t.Logf("%d XADDs over %d streams in %v; %d samples: worst oldest-entry age %v, worst age of the oldest node's last entry %v, longest oldest-node span %v (MAXAGE %v)",
		total, retStreams, elapsed.Round(time.Millisecond), samples.Load(), ms(&worstAge), ms(&worstLast), ms(&worstSpan), retMaxAge*time.Millisecond)
	if samples.Load() == 0 {
		t.Fatal("no samples")
	}
	// The oldest node goes once its last entry is older than MAXAGE, within
	// the cycle's period (250 ms) and the commit of its trim; the sample's
	// own read adds its latency. Around the kill a new leader must first be
	// elected (300 ms timeouts here).
	if slack := 1500 * time.Millisecond; ms(&worstLast) > retMaxAge*time.Millisecond+slack {
		t.Errorf("an oldest node stayed %v after its last entry was added: MAXAGE %v + %v", ms(&worstLast), retMaxAge*time.Millisecond, slack)
	}
	if ms(&worstAge) < retMaxAge*time.Millisecond {
		t.Errorf("worst oldest-entry age %v: retention trimmed entries younger than MAXAGE", ms(&worstAge))
	}

	// ACKED kept every entry the group has not acknowledged: all but the
	// first 10 (older than 500 ms long since).
	if n, err := cc.XLen(ctx, acked).Result(); err != nil || n != 40 {
		t.Errorf("XLEN %s = %d, %v; want 40", acked, n, err)
	}
	if r, err := cc.XRangeN(ctx, acked, "-", "+", 1).Result(); err != nil || len(r) != 1 || r[0].ID != ackedIDs[10] {
		t.Errorf("first entry of %s: %v %v, want %s", acked, r, err, ackedIDs[10])
	}

	// Every replica holds the same streams.
	keys := []string{acked}
	for i := range retStreams {
		keys = append(keys, fmt.Sprintf("orders:{%d}", i))
	}
	full := replicasAgree(t, addrs, keys, 20*time.Second)
	if !bytes.Contains(full, []byte("retention-policy")) {
		t.Errorf("XINFO STREAM FULL lacks the retention policy: %.400q", full)
	}

	// Every node restarts (from its snapshot and log): the table is back.
	for _, n := range nodes {
		n.Kill()
	}
	testkit.StartAll(t, nodes...)
	for _, a := range addrs {
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			got := retentionList(t, a)
			if got == list {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("RETENTION LIST on %s after the restart: %q, want %q", a, got, list)
			}
		}
	}
	replicasAgree(t, addrs, keys, 20*time.Second)
	if r := do(t, dial(t, leaderOfKey(t, addrs, acked)), "XLEN", acked); r != ":40\r\n" {
		t.Errorf("XLEN %s after the restart: %q", acked, r)
	}
	// DEL reaches every shard too.
	if r := do(t, dial(t, addrs[1]), "RAFTSTREAM", "RETENTION", "DEL", "orders:acked"); r != ":1\r\n" {
		t.Fatalf("RETENTION DEL: %q", r)
	}
	for _, a := range addrs {
		if got := retentionList(t, a); strings.Contains(got, "acked") {
			t.Errorf("RETENTION LIST on %s after DEL: %q", a, got)
		}
	}
}

// replicasAgree waits (until d) for every node, read with READONLY, to
// answer XINFO STREAM key FULL alike for every key, and returns the replies.
func replicasAgree(t *testing.T, addrs, keys []string, d time.Duration) []byte {
	t.Helper()
	var reads [][]string
	for _, k := range keys {
		reads = append(reads, []string{"XINFO", "STREAM", k, "FULL", "COUNT", "0"})
	}
	return readsAgree(t, addrs, reads, d, func(_ []string, r []byte) []byte { return r })
}
