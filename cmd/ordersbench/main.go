// Command ordersbench drives a partitioned order-processing workload against
// a Redis-protocol stream server (raftstream or redis-server) and measures it.
//
//	ordersbench -addr 127.0.0.1:6379 -producers 50 -pipeline 16 -duration 30s -verify -json out.json -html out.html
//
// # Workload
//
// Each of -producers producers sends XADD orders:{h} [MAXLEN ~ n] * order_id …
// customer … amount … sku … ts_ns … note …, with h = FNV-1a(order_id) mod
// -partitions; the braces are a hash tag, so a cluster client (-cluster)
// sends each partition to the shard that owns it. A producer keeps -pipeline
// commands in flight (redis-benchmark's -P); -rate caps the total XADD/s;
// production stops after -duration or -count orders. Every consumer group
// (-groups, default billing and analytics) has -consumers workers; partition
// p goes to worker p mod consumers, which reads with XREADGROUP … COUNT
// -read-count BLOCK -block STREAMS <its partitions> >, acknowledges each
// batch with one pipelined XACK per stream and sweeps stale pending entries
// with XAUTOCLAIM every -min-idle/2. When production ends the consumers
// drain: they stop once a read finds nothing and their PEL is empty, or at
// -drain-timeout. Every order_id carries a run tag: entries left by earlier
// runs are acknowledged but counted as foreign (-reset deletes the streams
// first).
//
// # Measures
//
// An xadd latency is one pipeline's round trip, recorded for every XADD in
// it (as redis-benchmark -P does); xreadgroup counts only reads that
// returned entries, blocking included; e2e is produce to ack (ts_ns to the
// XACK reply), backlog included. Histograms are log-linear: a percentile is
// at most 1/128 above the true value, the max is exact. Throughput is
// produced/s over production and consumed/s per group over the whole run,
// with a per-second timeline in -json and -html.
//
// # -verify
//
// Every XADD (acknowledged or not), every delivery and the time of each
// command are recorded, about 50 bytes per XADD and 25 per delivery. At the
// end the fault-injection suite's checkers judge that history stream by
// stream (see Verify): every acknowledged order was delivered to every group,
// in stream order, under one entry ID (a second copy is allowed under
// -cluster, whose client resends a pipeline after a retryable error); no
// delivery is of an order not produced on that partition; with -maxlen, an
// undelivered order must be gone from the stream's head (trimmed). XADDs
// whose reply was an error have an unknown outcome and may or may not be
// delivered; XAUTOCLAIM redeliveries are counted, not faults. A failed or
// undecidable check exits 1.
//
// PERFORMANCE.md gives the method, the current numbers against redis-server
// and the scripts that measure them.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
)

// cpuProfile is set by -cpuprofile (a flag of the command, not of a run).
var cpuProfile string

func main() {
	exit := 0
	defer func() {
		if exit != 0 {
			os.Exit(exit)
		}
	}()
	// 1. Flags → Config.
	cfg, err := ParseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "ordersbench:", err)
		os.Exit(2)
	}
	// 2. Optional CPU profile of the benchmark client itself.
	if cpuProfile != "" {
		f, err := os.Create(cpuProfile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "ordersbench:", err)
			os.Exit(2)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "ordersbench:", err)
			os.Exit(2)
		}
		defer f.Close()
		defer pprof.StopCPUProfile()
	}
	// 3. Interrupt stops producing and consuming; the report is still written.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// 4. Run; a failed verification or a setup error exits 1.
	if err := run(ctx, cfg, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "ordersbench:", err)
		exit = 1
	}
}
