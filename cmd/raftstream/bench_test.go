package main

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raftstream/raftstream/jepsen/testkit"
)

// xaddLoad runs clients connections, each sending pipelines of depth XADDs
// and waiting for their replies, for d. It returns acknowledged XADDs/s.
func xaddLoad(tb testing.TB, addr string, clients, depth int, d time.Duration) float64 {
	tb.Helper()
	var ops atomic.Int64
	var wg sync.WaitGroup
	stop := time.Now().Add(d)
	for i := 0; i < clients; i++ {
		c, err := testkit.Dial(addr)
		if err != nil {
			tb.Fatal(err)
		}
		wg.Add(1)
		go func(i int, c *testkit.Conn) {
			defer wg.Done()
			defer c.Close()
			var batch []byte
			for j := 0; j < depth; j++ {
				batch = append(batch, testkit.EncodeCommand("XADD", fmt.Sprintf("bench:%d", i), "*", "f", "vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv")...)
			}
			for time.Now().Before(stop) {
				if err := c.WriteRaw(batch); err != nil {
					tb.Error(err)
					return
				}
				for j := 0; j < depth; j++ {
					r, err := c.ReadReply()
					if err != nil || r[0] != '$' {
						tb.Errorf("XADD reply %q %v", r, err)
						return
					}
				}
				ops.Add(int64(depth))
			}
		}(i, c)
	}
	wg.Wait()
	return float64(ops.Load()) / d.Seconds()
}

// BenchmarkThroughput compares acknowledged XADDs/s of raftstream (Raft log
// fsynced by raft-boltdb) with redis-server --appendonly yes --appendfsync
// always, for many concurrent pipelined clients, and raftstream's batching
// against one client sending one command at a time (one entry per Raft
// log entry). Run: go test -run '^$' -bench Throughput -benchtime 1x ./cmd/raftstream
func BenchmarkThroughput(b *testing.B) {
	const clients, depth = 32, 32
	d := 3 * time.Second
	for i := 0; i < b.N; i++ {
		rs := startNode(b, "")
		redisAddr := testkit.StartRedis(b, "--appendonly", "yes", "--appendfsync", "always")
		single := xaddLoad(b, rs.Addr, 1, 1, d)
		rsOps := xaddLoad(b, rs.Addr, clients, depth, d)
		redisOps := xaddLoad(b, redisAddr, clients, depth, d)
		b.ReportMetric(rsOps, "raftstream-xadd/s")
		b.ReportMetric(redisOps, "redis-aof-always-xadd/s")
		b.ReportMetric(single, "raftstream-1client-xadd/s")
		b.ReportMetric(rsOps/redisOps, "ratio-vs-redis")
		b.ReportMetric(rsOps/single, "batching-gain")
		b.Logf("%d clients x pipeline %d: raftstream %.0f XADD/s, redis (appendfsync always) %.0f XADD/s, ratio %.2f; one client one command at a time: %.0f XADD/s, batching gain %.1fx",
			clients, depth, rsOps, redisOps, rsOps/redisOps, single, rsOps/single)
		if rsOps < 10*single {
			b.Errorf("batching gain %.1fx, want > 10x", rsOps/single)
		}
	}
}

// TestDeepPipelinesNeverBusy: more pipelined writes than a shard's queue
// holds (48 x 1000 > 8192) are throttled by the server, not rejected with
// TRYAGAIN, and all of them apply.
func TestDeepPipelinesNeverBusy(t *testing.T) {
	rs := startNode(t, "")
	const clients, depth = 48, 1000
	var wg sync.WaitGroup
	for i := 0; i < clients; i++ {
		c := dial(t, rs.Addr)
		wg.Add(1)
		go func(c *testkit.Conn) {
			defer wg.Done()
			var batch []byte
			for j := 0; j < depth; j++ {
				batch = append(batch, testkit.EncodeCommand("XADD", "deep", "*", "f", "v")...)
			}
			if err := c.WriteRaw(batch); err != nil {
				t.Error(err)
				return
			}
			for j := 0; j < depth; j++ {
				r, err := c.ReadReply()
				if err != nil || r[0] != '$' {
					t.Errorf("reply %d: %q %v", j, r, err)
					return
				}
			}
		}(c)
	}
	wg.Wait()
	c := dial(t, rs.Addr)
	if got, want := do(t, c, "XLEN", "deep"), fmt.Sprintf(":%d\r\n", clients*depth); got != want {
		t.Fatalf("XLEN %q, want %q", got, want)
	}
}
