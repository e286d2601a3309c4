package cluster

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raftstream/raftstream/fsm"
)

// BenchmarkNodeSubmitXADD measures XADD throughput through Node.Submit on
// a single node (4 shards, real bolt files with fsync), with b.RunParallel
// goroutines × 128 submitters each so the fsm batcher has work to batch.
func BenchmarkNodeSubmitXADD(b *testing.B) {
	cfg := testConfig(b, b.TempDir())
	cfg.Shards = 4
	n, err := Open(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer n.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := n.Start(ctx); err != nil {
		b.Fatal(err)
	}
	if err := n.WaitLeaders(ctx); err != nil {
		b.Fatal(err)
	}
	var seq atomic.Int64
	b.SetParallelism(128)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := seq.Add(1)
			key := []byte("bench:{" + strconv.FormatInt(i%64, 10) + "}")
			u := fsm.Unit{{[]byte("XADD"), key, []byte("*"), []byte("f"), []byte("v")}}
			if _, err := n.Submit(n.ShardOfKey(key), u).Wait(ctx); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "xadd/s")
}

// BenchmarkThreeNodeSubmitXADD measures replicated XADD throughput on a
// 3-node in-process cluster (16 shards, 3 replicas, fsync on every node):
// each submitter sends to the local replica that leads the key's shard.
func BenchmarkThreeNodeSubmitXADD(b *testing.B) {
	tc := startCluster(b, 3, 16)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	waitBalancedB(b, tc, 30*time.Second)
	leaderOf := func(shard int) *Node {
		for _, n := range tc.nodes {
			if st, ok := n.ShardStatus(shard); ok && st.Role == "leader" {
				return n
			}
		}
		return nil
	}
	var seq atomic.Int64
	b.SetParallelism(128)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := seq.Add(1)
			key := []byte("bench:{" + strconv.FormatInt(i%256, 10) + "}")
			s := tc.nodes[0].ShardOfKey(key)
			u := fsm.Unit{{[]byte("XADD"), key, []byte("*"), []byte("f"), []byte("v")}}
			for attempt := 0; ; attempt++ {
				n := leaderOf(s)
				if n == nil {
					time.Sleep(10 * time.Millisecond)
					continue
				}
				_, err := n.Submit(s, u).Wait(ctx)
				if err == nil {
					break
				}
				// NotLeader while a balancing transfer is in flight: retry.
				if attempt > 500 {
					b.Error(err)
					return
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "xadd/s")
}

func waitBalancedB(b *testing.B, tc *testCluster, d time.Duration) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		c := tc.leadCounts()
		ok := len(c) == 3
		for _, v := range c {
			ok = ok && v >= 5 && v <= 6
		}
		if ok {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}
