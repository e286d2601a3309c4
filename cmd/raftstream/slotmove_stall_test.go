package main

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/raftstream/raftstream/slots"
)

// TestSlotMoveWriteStall measures the write stall a moving slot causes: a
// stream of N entries (N from RAFTSTREAM_STALL_SIZES, default 1000; the
// figures in cluster/DESIGN.md are for 1000,100000,1000000) is filled, then
// a go-redis ClusterClient appends to it one XADD at a time while its slot
// moves to another shard at the default rate limit. The latencies of the
// appends issued while the slot moved (the key is frozen while it is
// copied: TRYAGAIN, retried by the client) give p50, p99 and max.
func TestSlotMoveWriteStall(t *testing.T) {
	redis.SetLogger(quietLogger{})
	sizes := []int{1000}
	if s := os.Getenv("RAFTSTREAM_STALL_SIZES"); s != "" {
		sizes = nil
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				t.Fatal(err)
			}
			sizes = append(sizes, n)
		}
	}
	nodes := startCluster(t, 3, 3)
	rs := addrsOf(nodes)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: rs, Protocol: 2, DisableIdentity: true,
		MaxRedirects: 100, ReadTimeout: 30 * time.Second, MinRetryBackoff: 5 * time.Millisecond, MaxRetryBackoff: 100 * time.Millisecond})
	defer cc.Close()
	tags := tagsInRange(len(sizes), slots.Range{First: 0, Last: 5460})
	for i, n := range sizes {
		key := "{" + tags[i] + "}stall"
		slot := slots.OfString(tags[i])
		val := strings.Repeat("x", 16)
		fill := time.Now()
		for done := 0; done < n; {
			batch := min(2000, n-done)
			pipe := cc.Pipeline()
			for j := 0; j < batch; j++ {
				pipe.XAdd(ctx, &redis.XAddArgs{Stream: key, Values: []string{"v", val}})
			}
			if _, err := pipe.Exec(ctx); err != nil {
				t.Fatalf("filling %s: %v", key, err)
			}
			done += batch
		}
		t.Logf("%s: %d entries written in %v", key, n, time.Since(fill).Round(time.Millisecond))
		type sample struct {
			at  time.Time
			lat time.Duration
		}
		var (
			mu      sync.Mutex
			samples []sample
			stop    = make(chan struct{})
			wg      sync.WaitGroup
			failed  error
		)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				t0 := time.Now()
				if err := cc.XAdd(ctx, &redis.XAddArgs{Stream: key, Values: []string{"v", val}}).Err(); err != nil {
					failed = err
					return
				}
				mu.Lock()
				samples = append(samples, sample{t0, time.Since(t0)})
				mu.Unlock()
			}
		}()
		time.Sleep(time.Second)
		start := time.Now()
		if _, err := moveSlot(rs[0], slot, 1+i%2); err != nil {
			t.Fatal(err)
		}
		if err := waitSlotOwner(ctx, rs, slot, 1+i%2); err != nil {
			t.Fatal(err)
		}
		took := time.Since(start)
		time.Sleep(500 * time.Millisecond)
		close(stop)
		wg.Wait()
		if failed != nil {
			t.Fatalf("%s: an XADD failed during the move: %v", key, failed)
		}
		var during, before []time.Duration
		for _, s := range samples {
			switch {
			case s.at.Before(start):
				before = append(before, s.lat)
			case s.at.Before(start.Add(took)):
				during = append(during, s.lat)
			}
		}
		pct := func(d []time.Duration, p float64) time.Duration {
			if len(d) == 0 {
				return 0
			}
			slices.Sort(d)
			return d[min(len(d)-1, int(float64(len(d))*p))]
		}
		t.Logf("%s: %d entries moved in %v; XADD latency while moving: p50 %v p99 %v max %v over %d writes (before: p50 %v p99 %v)",
			key, n, took.Round(time.Millisecond), pct(during, 0.5), pct(during, 0.99), pct(during, 1), len(during),
			pct(before, 0.5), pct(before, 0.99))
		if got, err := cc.XLen(ctx, key).Result(); err != nil || got < int64(n) {
			t.Fatalf("%s: XLEN %d after the move, %v", key, got, err)
		}
	}
}
