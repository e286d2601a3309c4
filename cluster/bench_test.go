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
