package main

import (
	"flag"
	"fmt"
	"log/slog"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// gcOptions is the Go memory policy of the process (--go-gc-percent,
// --go-memory-floor, --go-memory-limit).
//
// Go's default (GOGC=100) lets the heap grow to twice the live data before
// it collects, so a node's RSS is about twice its data, where Redis's is
// about its data. The policy here turns the proportional trigger off and
// instead sets the runtime's soft memory limit after every collection to
//
//	max(floor, live heap × (1 + percent/100) + the runtime's other memory)
//
// capped at --go-memory-limit when that is set: the heap may grow percent
// past the live data, but never needs to collect before floor, so a node
// with little data collects less often than under GOGC=100. With a memory
// limit the runtime also returns freed pages to the OS promptly rather than
// over minutes; and a node that goes quiet after a burst of work gives back
// the headroom and the burst's garbage (trimWhenIdle). GOGC or GOMEMLIMIT in
// the environment turn the policy off (the runtime's own settings win).
type gcOptions struct {
	percent int
	floor   sizeFlag
	limit   sizeFlag
}

func registerGCFlags(fs *flag.FlagSet, o *gcOptions) {
	o.floor = 32 << 20
	fs.IntVar(&o.percent, "go-gc-percent", 25, "how far, in percent of the live heap, the Go heap may grow before the next collection (negative = the Go runtime's default policy, GOGC)")
	fs.Var(&o.floor, "go-memory-floor", "Go memory below which no collection is forced by --go-gc-percent (bytes; k, kb, m, mb, g, gb units)")
	fs.Var(&o.limit, "go-memory-limit", "ceiling of the Go runtime's soft memory limit (bytes, with units; 0 = none): past it the garbage collector works harder rather than let memory grow")
}

// sizeFlag is a byte count with Redis's units (k=1000, kb=1024, m, mb, g, gb)
// or Go's (KiB, MiB, GiB).
type sizeFlag int64

func (s *sizeFlag) String() string { return strconv.FormatInt(int64(*s), 10) }

func (s *sizeFlag) Set(v string) error {
	t := strings.ToLower(strings.TrimSpace(v))
	mul := int64(1)
	for _, u := range []struct {
		suffix string
		mul    int64
	}{{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"gb", 1 << 30}, {"mb", 1 << 20}, {"kb", 1 << 10}, {"g", 1e9}, {"m", 1e6}, {"k", 1e3}, {"b", 1}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mul = strings.TrimSuffix(t, u.suffix), u.mul
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 || (n > 0 && mul > math.MaxInt64/n) {
		return fmt.Errorf("invalid size %q", v)
	}
	*s = sizeFlag(n * mul)
	return nil
}

// gcTuner re-derives the memory limit after every garbage collection.
type gcTuner struct {
	percent      int64
	floor, limit int64
	samples      []metrics.Sample
	set          atomic.Int64 // the limit last set (tests, logs)
	trims        atomic.Int64 // idle trims done (tests)
	stopped      atomic.Bool
}

// startGCPolicy applies o to the runtime and returns a stop function that
// restores nothing (the process is ending) but ends the re-arming.
func startGCPolicy(o gcOptions, log *slog.Logger) (stop func()) {
	if o.percent < 0 {
		if o.limit > 0 {
			debug.SetMemoryLimit(int64(o.limit))
		}
		return func() {}
	}
	if env := envSet("GOGC", "GOMEMLIMIT"); env != "" {
		log.Info("Go memory policy left to the runtime", "env", env)
		return func() {}
	}
	t := &gcTuner{percent: int64(o.percent), floor: int64(o.floor), limit: int64(o.limit), samples: []metrics.Sample{
		{Name: "/gc/heap/live:bytes"},
		{Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/unused:bytes"},
		{Name: "/memory/classes/heap/free:bytes"},
		{Name: "/memory/classes/heap/released:bytes"},
	}}
	t.tune()
	debug.SetGCPercent(-1)
	t.arm()
	done := make(chan struct{})
	go t.trimWhenIdle(time.Second, done)
	log.Info("Go memory policy", "gc_percent", o.percent, "floor", int64(o.floor), "limit", int64(o.limit))
	return func() { t.stopped.Store(true); close(done) }
}

// Idle trim: the heap may be percent past its live data while the node
// works, but a node that went quiet after a burst (a bulk load, a drain)
// would hold that headroom, and the burst's garbage, for as long as it
// stays quiet. trimWhenIdle checks every period how much the process
// allocated; once a period allocates less than idleAllocBytes after at
// least burstAllocBytes were allocated since the last trim, it collects and
// returns the freed memory to the OS (debug.FreeOSMemory): one collection
// per burst, none while the node is busy or stays idle.
const (
	idleAllocBytes  = 1 << 20
	burstAllocBytes = 32 << 20
)

func (t *gcTuner) trimWhenIdle(period time.Duration, done <-chan struct{}) {
	allocs := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	read := func() uint64 {
		metrics.Read(allocs)
		if allocs[0].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return allocs[0].Value.Uint64()
	}
	tick := time.NewTicker(period)
	defer tick.Stop()
	last := read()
	trimmed := last
	for {
		select {
		case <-done:
			return
		case <-tick.C:
		}
		now := read()
		if now-last < idleAllocBytes && now-trimmed >= burstAllocBytes {
			debug.FreeOSMemory()
			t.trims.Add(1)
			now = read()
			trimmed = now
		}
		last = now
	}
}

func envSet(names ...string) string {
	for _, n := range names {
		if v := os.Getenv(n); v != "" {
			return n + "=" + v
		}
	}
	return ""
}

// gcSentinel becomes unreachable as soon as it is armed; its finalizer runs
// after the collection that found it so, and arms the next one.
type gcSentinel struct{ t *gcTuner }

func (t *gcTuner) arm() {
	runtime.SetFinalizer(&gcSentinel{t: t}, func(s *gcSentinel) {
		if s.t.stopped.Load() {
			return
		}
		s.t.tune()
		s.t.arm()
	})
}

// tune sets the memory limit from the live heap the last collection found.
func (t *gcTuner) tune() {
	metrics.Read(t.samples)
	v := func(i int) int64 {
		if t.samples[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return int64(t.samples[i].Value.Uint64())
	}
	live, total := v(0), v(1)
	// The runtime's heap goal under a memory limit is the limit less the
	// memory that is neither heap objects nor free heap pages (stacks, GC
	// and runtime metadata, and the heap's unused span space), less a
	// headroom it keeps back for pacing: memoryLimitHeapGoalHeadroomPercent
	// (3%) of the goal, at least 1 MiB (runtime/mgcpacer.go). Both are
	// added back, so that the heap may grow percent past the live data as
	// documented: left out, a 3-node cluster under a write load collected
	// every 9% of growth instead of every 25%, and spent a sixth of its CPU
	// marking.
	nonHeap := max(total-v(2)-v(4)-v(5), 0)
	goal := live + live*t.percent/100
	goal += max(goal*3/97, 1<<20)
	limit := max(t.floor, goal+nonHeap)
	if t.limit > 0 {
		limit = min(limit, t.limit)
	}
	debug.SetMemoryLimit(limit)
	t.set.Store(limit)
}
