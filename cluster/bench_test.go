package cluster

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/raft"

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

// BenchmarkAppendEntries sends AppendEntries (one 4 KiB entry each) from
// 16 groups at once to a peer whose "raft" answers at once, over the raft
// bus and over the groups' own NetworkTransports, and reports the CPU time
// both ends spent per RPC (getrusage: comparable on a busy machine, where
// rates are not) and the bus's socket writes per RPC.
func BenchmarkAppendEntries(b *testing.B) {
	const groups = 16
	for _, mode := range []string{"bus", "network"} {
		b.Run(mode, func(b *testing.B) {
			a, peer := newBenchBusNode(b, groups), newBenchBusNode(b, groups)
			send := make([]raft.Transport, groups)
			for g := range groups {
				if mode == "bus" {
					send[g] = a.trs[g]
				} else {
					send[g] = announcingTransport{a.trs[g].NetworkTransport, &a.stats}
				}
				go func() {
					for rpc := range peer.trs[g].Consumer() {
						rpc.Respond(&raft.AppendEntriesResponse{Term: 1, Success: true}, nil)
					}
				}()
			}
			target := raft.ServerAddress(peer.mux.Addr().String())
			data := make([]byte, 4096)
			var next atomic.Int64
			var cpu0 syscall.Rusage
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &cpu0)
			w0 := a.bus.Stats().Writes + peer.bus.Stats().Writes
			b.ResetTimer()
			var wg sync.WaitGroup
			for g := range groups {
				wg.Go(func() {
					var resp raft.AppendEntriesResponse
					for next.Add(1) <= int64(b.N) {
						req := &raft.AppendEntriesRequest{Term: 1, PrevLogEntry: 1, LeaderCommitIndex: 1,
							Entries: []*raft.Log{{Index: 2, Term: 1, Type: raft.LogCommand, Data: data}}}
						if err := send[g].AppendEntries("peer", target, req, &resp); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			var cpu1 syscall.Rusage
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &cpu1)
			ns := func(r syscall.Rusage) int64 { return r.Utime.Nano() + r.Stime.Nano() }
			b.ReportMetric(float64(ns(cpu1)-ns(cpu0))/1e3/float64(b.N), "cpu-µs/op")
			if mode == "bus" {
				b.ReportMetric(float64(a.bus.Stats().Writes+peer.bus.Stats().Writes-w0)/float64(b.N), "writes/op")
			}
		})
	}
}

func newBenchBusNode(b *testing.B, groups int) *busNode {
	shards := make([]int, groups)
	for i := range shards {
		shards[i] = i
	}
	return newBusNode(b, 10*time.Second, shards...)
}
