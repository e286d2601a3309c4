package fsm

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
)

// BenchmarkSubmit measures commands/s through a single-voter shard (real
// bolt log with fsync, real TCP transport) with 50 concurrent submitters,
// batched versus one log entry per command.
//
//	go test ./fsm -run XXX -bench Submit -benchtime 20000x
func BenchmarkSubmit(b *testing.B) {
	for _, bc := range []struct {
		name     string
		maxBatch int
	}{{"batched", DefaultConfig().MaxBatchCommands}, {"entry-per-command", 1}} {
		b.Run(bc.name, func(b *testing.B) {
			s := singleVoter(b, func(c *Config) { c.MaxBatchCommands = bc.maxBatch })
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
