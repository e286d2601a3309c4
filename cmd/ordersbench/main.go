// Command ordersbench drives a partitioned order-processing workload against
// a Redis-protocol stream server (raftstream or redis-server) and measures it.
//
// Producers XADD orders to orders:{hash(order_id) % N}; every consumer group
// (billing, analytics) reads all partitions with XREADGROUP, acknowledges
// with XACK and sweeps stale entries with XAUTOCLAIM. It reports per-command
// latency percentiles, produce-to-ack latency and throughput over time, and
// with -verify checks that every acknowledged order was consumed exactly once
// per group. See PERFORMANCE.md for the method and measured numbers.
//
//	ordersbench -addr 127.0.0.1:6379 -producers 50 -pipeline 16 -duration 30s -verify -json out.json -html out.html
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
