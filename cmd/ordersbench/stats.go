package main

import (
	"sync"
	"time"
)

// op names a measured command.
type op int

const (
	opXAdd op = iota
	opXReadGroup
	opXAck
	opXAutoClaim
	numOps
)

var opNames = [numOps]string{"xadd", "xreadgroup", "xack", "xautoclaim"}

// shard is the measurements of one goroutine (a producer or a reader) since
// the last harvest. Its owner records under mu (uncontended except for the
// once-a-second harvest), so recording costs no shared cache line.
type shard struct {
	mu    sync.Mutex
	group int // index into Config.Groups for a reader, -1 for a producer
	lat   [numOps]*Histogram
	ops   [numOps]uint64
	errs  [numOps]uint64
	e2e   *Histogram
	// msgs counts deliveries of this run's orders; foreign those of other runs.
	msgs, foreign uint64
}

func (s *shard) hist(o op) *Histogram {
	if s.lat[o] == nil {
		s.lat[o] = NewHistogram()
	}
	return s.lat[o]
}

// record adds n successful commands of kind o that each took d.
func (s *shard) record(o op, n int, d time.Duration) {
	s.mu.Lock()
	h := s.hist(o)
	for range n {
		h.Record(int64(d))
	}
	s.ops[o] += uint64(n)
	s.mu.Unlock()
}

// fail counts n failed commands of kind o.
func (s *shard) fail(o op, n int) {
	s.mu.Lock()
	s.errs[o] += uint64(n)
	s.mu.Unlock()
}

// delivered counts deliveries and records end-to-end latencies (ns) of the
// acknowledged ones.
func (s *shard) delivered(msgs, foreign int, e2e []int64) {
	s.mu.Lock()
	if s.e2e == nil {
		s.e2e = NewHistogram()
	}
	for _, v := range e2e {
		s.e2e.Record(v)
	}
	s.msgs += uint64(msgs)
	s.foreign += uint64(foreign)
	s.mu.Unlock()
}

// window is the aggregate of all shards over some period.
type window struct {
	lat  [numOps]*Histogram
	ops  [numOps]uint64
	errs [numOps]uint64
	// e2e, msgs and foreign are per group.
	e2e     []*Histogram
	msgs    []uint64
	foreign []uint64
}

func newWindow(groups int) *window {
	w := &window{e2e: make([]*Histogram, groups), msgs: make([]uint64, groups), foreign: make([]uint64, groups)}
	for i := range w.lat {
		w.lat[i] = NewHistogram()
	}
	for i := range w.e2e {
		w.e2e[i] = NewHistogram()
	}
	return w
}

func (w *window) reset() {
	for i := range w.lat {
		w.lat[i].Reset()
		w.ops[i], w.errs[i] = 0, 0
	}
	for i := range w.e2e {
		w.e2e[i].Reset()
		w.msgs[i], w.foreign[i] = 0, 0
	}
}

func (w *window) merge(o *window) {
	for i := range w.lat {
		w.lat[i].Merge(o.lat[i])
		w.ops[i] += o.ops[i]
		w.errs[i] += o.errs[i]
	}
	for i := range w.e2e {
		w.e2e[i].Merge(o.e2e[i])
		w.msgs[i] += o.msgs[i]
		w.foreign[i] += o.foreign[i]
	}
}

// allE2E merges every group's end-to-end histogram into h.
func (w *window) allE2E(h *Histogram) {
	h.Reset()
	for _, g := range w.e2e {
		h.Merge(g)
	}
}

// Point is one interval of the throughput-over-time series.
type Point struct {
	// T is the interval's end, in seconds since production started; Secs its length.
	T    float64 `json:"t"`
	Secs float64 `json:"secs"`
	// Produced and Consumed (per group, in Config.Groups order) are per second.
	ProducedPerSec float64   `json:"produced_per_sec"`
	ConsumedPerSec []float64 `json:"consumed_per_sec"`
	Errors         uint64    `json:"errors"`
	// Latencies in microseconds.
	XAddP50us float64 `json:"xadd_p50_us"`
	XAddP99us float64 `json:"xadd_p99_us"`
	E2EP99us  float64 `json:"e2e_p99_us"`
}

// Stats collects the shards and turns them into a timeline and totals.
// Harvest is called by one goroutine only.
type Stats struct {
	mu     sync.Mutex // guards shards
	shards []*shard
	groups int
	start  time.Time
	last   time.Time

	iv       *window // scratch for one harvest
	total    *window
	scratch  *Histogram
	Timeline []Point
}

// NewStats starts the clock at start.
func NewStats(groups int, start time.Time) *Stats {
	return &Stats{groups: groups, start: start, last: start, iv: newWindow(groups), total: newWindow(groups), scratch: NewHistogram()}
}

// Shard returns a new shard for one goroutine; group is -1 for producers.
func (st *Stats) Shard(group int) *shard {
	s := &shard{group: group}
	st.mu.Lock()
	st.shards = append(st.shards, s)
	st.mu.Unlock()
	return s
}

// Harvest moves everything recorded since the previous harvest into the
// totals and appends one timeline point ending at now.
func (st *Stats) Harvest(now time.Time) Point {
	st.iv.reset()
	st.mu.Lock()
	shards := st.shards
	st.mu.Unlock()
	for _, s := range shards {
		s.mu.Lock()
		for o := range s.lat {
			if s.lat[o] != nil {
				st.iv.lat[o].Merge(s.lat[o])
				s.lat[o].Reset()
			}
			st.iv.ops[o] += s.ops[o]
			st.iv.errs[o] += s.errs[o]
			s.ops[o], s.errs[o] = 0, 0
		}
		if s.group >= 0 {
			if s.e2e != nil {
				st.iv.e2e[s.group].Merge(s.e2e)
				s.e2e.Reset()
			}
			st.iv.msgs[s.group] += s.msgs
			st.iv.foreign[s.group] += s.foreign
		}
		s.msgs, s.foreign = 0, 0
		s.mu.Unlock()
	}
	st.total.merge(st.iv)
	secs := now.Sub(st.last).Seconds()
	if secs <= 0 {
		secs = 1e-9
	}
	st.last = now
	p := Point{T: now.Sub(st.start).Seconds(), Secs: secs, ProducedPerSec: float64(st.iv.ops[opXAdd]) / secs}
	for g := range st.groups {
		p.ConsumedPerSec = append(p.ConsumedPerSec, float64(st.iv.msgs[g])/secs)
	}
	for o := range st.iv.errs {
		p.Errors += st.iv.errs[o]
	}
	p.XAddP50us = us(st.iv.lat[opXAdd].Quantile(0.5))
	p.XAddP99us = us(st.iv.lat[opXAdd].Quantile(0.99))
	st.iv.allE2E(st.scratch)
	p.E2EP99us = us(st.scratch.Quantile(0.99))
	st.Timeline = append(st.Timeline, p)
	return p
}

func us(ns int64) float64 { return float64(ns) / 1e3 }
