package fsm

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
)

// BenchmarkSubmit measures commands/s through a single-voter shard (real
// bolt log with fsync, real TCP transport) with 50 concurrent submitters,
// batched versus one log entry per command; with fsync (latency-bound) and
// without (CPU-bound: what per-entry overhead costs).
//
//	go test ./fsm -run XXX -bench Submit -benchtime 20000x
func BenchmarkSubmit(b *testing.B) {
	type variant struct {
		name     string
		maxBatch int
		noSync   bool
	}
	var vs []variant
	for _, noSync := range []bool{false, true} {
		sync := "fsync"
		if noSync {
			sync = "nosync"
		}
		vs = append(vs,
			variant{sync + "/batched", DefaultConfig().MaxBatchCommands, noSync},
			variant{sync + "/entry-per-command", 1, noSync})
	}
	for _, bc := range vs {
		b.Run(bc.name, func(b *testing.B) {
			s := singleVoter(b, func(c *Config) { c.MaxBatchCommands, c.NoSync = bc.maxBatch, bc.noSync })
			const submitters = 50
			before := s.Raft().LastIndex()
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			for w := 0; w < submitters; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for next.Add(1) <= int64(b.N) {
						if _, err := s.Submit(incr).Wait(context.Background()); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			entries := s.Raft().LastIndex() - before
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "cmds/s")
			b.ReportMetric(float64(b.N)/float64(max(entries, 1)), "cmds/entry")
		})
	}
}
