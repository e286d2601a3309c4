package fsm

import (
	"math"
	"sort"
	"sync/atomic"
)

// Histogram is the recorder behind every distribution the node exports:
// a shard's batch sizes, commit and snapshot durations (Stats), and the
// RESP server's command latencies. It has fixed upper bounds and takes no
// lock: Observe is called on hot paths (every command, every entry) from
// any goroutine, and Snapshot from a scrape at the same time.
type Histogram struct {
	bounds []float64
	counts []atomic.Uint64
	count  atomic.Uint64
	sum    atomic.Uint64 // float64 bits
}

// HistSnapshot is a histogram's state: Counts[i] observations fell in
// (Bounds[i-1], Bounds[i]] (not cumulative); Count and Sum include values
// above the last bound.
type HistSnapshot struct {
	Bounds []float64
	Counts []uint64
	Count  uint64
	Sum    float64
}

// LatencyBuckets are the bounds, in seconds, of every latency histogram
// (commit, snapshot and command durations): 100µs to ~13s, doubling.
var LatencyBuckets = doubling(0.0001, 18)

// NewHistogram returns a histogram with the given ascending upper bounds.
func NewHistogram(bounds []float64) *Histogram {
	return &Histogram{bounds: bounds, counts: make([]atomic.Uint64, len(bounds))}
}

// Observe records v.
func (h *Histogram) Observe(v float64) { h.ObserveN(v, 1) }

// ObserveN records v n times.
func (h *Histogram) ObserveN(v float64, n uint64) {
	if i := sort.SearchFloat64s(h.bounds, v); i < len(h.counts) {
		h.counts[i].Add(n)
	}
	h.count.Add(n)
	sum := v * float64(n)
	for {
		old := h.sum.Load()
		if h.sum.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+sum)) {
			return
		}
	}
}

// Snapshot reads the counts (not atomic across buckets; fine for scrapes).
func (h *Histogram) Snapshot() HistSnapshot {
	out := HistSnapshot{Bounds: h.bounds, Counts: make([]uint64, len(h.counts))}
	for i := range h.counts {
		out.Counts[i] = h.counts[i].Load()
	}
	out.Count = h.count.Load()
	out.Sum = math.Float64frombits(h.sum.Load())
	return out
}

// doubling returns n bounds starting at first, each twice the one before.
func doubling(first float64, n int) []float64 {
	b := make([]float64, n)
	for i := range b {
		b[i] = first
		first *= 2
	}
	return b
}
