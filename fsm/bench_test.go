package fsm

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/raftstream/raftstream/fsm/nodelog"
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
			r0 := rusage()
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
			reportRusage(b, r0)
		})
	}
}

// rusage is the process's CPU time and context switches so far.
func rusage() syscall.Rusage {
	var r syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &r)
	return r
}

// reportRusage reports the CPU time (user + system) and the context
// switches (voluntary + involuntary) of the process per operation since r0:
// on a busy machine these compare where rates do not.
func reportRusage(b *testing.B, r0 syscall.Rusage) {
	r1 := rusage()
	cpu := func(r syscall.Rusage) int64 { return r.Utime.Nano() + r.Stime.Nano() }
	b.ReportMetric(float64(cpu(r1)-cpu(r0))/1e3/float64(b.N), "cpu-µs/op")
	b.ReportMetric(float64(r1.Nvcsw+r1.Nivcsw-r0.Nvcsw-r0.Nivcsw)/float64(b.N), "csw/op")
}

// BenchmarkLogStoreShards measures Raft log appends/s when 1 or 16 shard
// replicas of one node append at once (each one StoreLogs at a time, as raft
// does), with the node log (one group-committed log for all) and with a
// bbolt file per shard; both fsync. The ratio of the two in one run is the
// figure: the node log shares each fdatasync among the shards waiting.
//
//	go test ./fsm -run XXX -bench LogStoreShards -benchtime 3000x
func BenchmarkLogStoreShards(b *testing.B) {
	data := make([]byte, 2048) // a batch of ~15 XADDs
	for _, kind := range []string{LogStoreNode, LogStoreBolt} {
		for _, shards := range []int{1, 16} {
			b.Run(fmt.Sprintf("%s/shards=%d", kind, shards), func(b *testing.B) {
				dir := b.TempDir()
				log := slog.New(slog.DiscardHandler)
				var nl *nodelog.Log
				if kind == LogStoreNode {
					var err error
					if nl, err = nodelog.Open(nodelog.Options{Dir: filepath.Join(dir, "nodelog"), Logger: log}); err != nil {
						b.Fatal(err)
					}
					defer nl.Close()
				}
				stores := make([]raftStore, shards)
				for i := range stores {
					sd := filepath.Join(dir, fmt.Sprint(i))
					if err := os.MkdirAll(sd, 0o755); err != nil {
						b.Fatal(err)
					}
					st, err := openRaftStore(kind, sd, false, nl, hclog.NewNullLogger())
					if err != nil {
						b.Fatal(err)
					}
					defer st.Close()
					stores[i] = st
				}
				var next atomic.Int64
				var wg sync.WaitGroup
				b.ResetTimer()
				for _, st := range stores {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for idx := uint64(1); next.Add(1) <= int64(b.N); idx++ {
							if err := st.StoreLogs([]*raft.Log{{Index: idx, Term: 1, Type: raft.LogCommand, Data: data}}); err != nil {
								b.Error(err)
								return
							}
						}
					}()
				}
				wg.Wait()
				b.StopTimer()
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
				if nl != nil {
					st := nl.Stats()
					b.ReportMetric(float64(st.Ops)/float64(max(st.Batches, 1)), "appends/fsync")
				}
			})
		}
	}
}
