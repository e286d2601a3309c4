package fsm

import (
	"math"
	"sort"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// Stats are a shard replica's operational counters, for /metrics. They are
// cumulative since Open (counters) or instantaneous (Queued, InFlight).
type Stats struct {
	// Queued is the number of proposals (and read fences) waiting for the
	// batcher; InFlight the entries proposed to Raft and not yet applied.
	Queued, InFlight int
	// Rejected counts submissions refused with ErrBusy (queue full).
	Rejected uint64
	// Entries counts entries proposed by this replica while leader.
	Entries uint64
	// LeaderChanges counts leader observations (a new leader, or none)
	// made by this replica: elections and transfers.
	LeaderChanges uint64
	// Snapshots counts snapshots taken through TakeSnapshot; LastSnapshotBytes
	// is the size of the newest snapshot on disk (0 if none).
	Snapshots         uint64
	LastSnapshotBytes int64
	// BatchCommands is the distribution of commands per proposed entry.
	BatchCommands HistSnapshot
	// CommitSeconds is the time from raft.Apply to the entry's result on
	// the leader: replication, fsync on a quorum, and apply.
	CommitSeconds HistSnapshot
	// SnapshotSeconds is the duration of TakeSnapshot calls that succeeded.
	SnapshotSeconds HistSnapshot
	// StorageFault is the error that stopped the replica (its Raft log
	// store failed a write; see StorageFault), "" while healthy.
	StorageFault string
	// NodeLogSegmentsHeld is what Shard.NodeLogSegmentsHeld returns: the
	// node log segments the replica's Raft log keeps from being deleted.
	NodeLogSegmentsHeld int
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

// Histogram is a lock-free fixed-bound histogram (also used by resp for
// command latencies).
type Histogram struct {
	bounds []float64
	counts []atomic.Uint64
	count  atomic.Uint64
	sum    atomic.Uint64 // float64 bits
}

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

// latencyBounds are 100µs..~13s doubling; batchBounds 1..16384 doubling.
var (
	latencyBounds = doubling(0.0001, 18)
	batchBounds   = doubling(1, 15)
)

func doubling(first float64, n int) []float64 {
	b := make([]float64, n)
	for i := range b {
		b[i] = first
		first *= 2
	}
	return b
}

// shardStats is the mutable side of Stats, embedded in Shard.
type shardStats struct {
	rejected, entries, leaderChanges, snapshots atomic.Uint64
	inflight                                    atomic.Int64
	batch, commit, snapshot                     *Histogram
	// leaderLost is when raft last reported that this replica knows no
	// leader (unix nanoseconds), 0 once it knows one (electionPending).
	leaderLost atomic.Int64
}

// initStats sets up the histograms and counts leader changes with a Raft
// observer whose filter does the counting (and notes when the leader was
// lost) and returns false: nothing is ever queued on the channel, so no
// goroutine has to drain it.
func (s *Shard) initStats() {
	s.stats.batch = NewHistogram(batchBounds)
	s.stats.commit = NewHistogram(latencyBounds)
	s.stats.snapshot = NewHistogram(latencyBounds)
	s.raft.RegisterObserver(raft.NewObserver(make(chan raft.Observation), false, func(o *raft.Observation) bool {
		if lo, ok := o.Data.(raft.LeaderObservation); ok {
			s.stats.leaderChanges.Add(1)
			if lo.LeaderID == "" {
				s.stats.leaderLost.Store(time.Now().UnixNano())
			} else {
				s.stats.leaderLost.Store(0)
			}
		}
		return false
	}))
}

// noteBatch records one entry of cmds commands handed to Raft.
func (s *Shard) noteBatch(cmds int) {
	s.stats.entries.Add(1)
	s.stats.inflight.Add(1)
	s.stats.batch.Observe(float64(cmds))
}

// noteApplied records the outcome of an entry proposed at since: its commit
// latency when err is nil.
func (s *Shard) noteApplied(since time.Time, err error) {
	s.stats.inflight.Add(-1)
	if err == nil {
		s.stats.commit.Observe(time.Since(since).Seconds())
	}
}

// snapshotTimed takes a snapshot and records its duration.
func (s *Shard) snapshotTimed() error {
	start := time.Now()
	err := s.raft.Snapshot().Error()
	if err == nil {
		s.stats.snapshots.Add(1)
		s.stats.snapshot.Observe(time.Since(start).Seconds())
	}
	return err
}

// Stats reports the replica's counters. It takes no lock that apply or the
// batcher holds.
func (s *Shard) Stats() Stats {
	st := Stats{
		Queued:          len(s.queue),
		InFlight:        int(s.stats.inflight.Load()),
		Rejected:        s.stats.rejected.Load(),
		Entries:         s.stats.entries.Load(),
		LeaderChanges:   s.stats.leaderChanges.Load(),
		Snapshots:       s.stats.snapshots.Load(),
		BatchCommands:   s.stats.batch.Snapshot(),
		CommitSeconds:   s.stats.commit.Snapshot(),
		SnapshotSeconds: s.stats.snapshot.Snapshot(),

		NodeLogSegmentsHeld: s.NodeLogSegmentsHeld(),
	}
	if err := s.StorageFault(); err != nil {
		st.StorageFault = err.Error()
	}
	if metas, err := s.snaps.List(); err == nil && len(metas) > 0 {
		st.LastSnapshotBytes = metas[0].Size
	}
	return st
}

// batchCommands counts the commands of an entry's units.
func batchCommands(units []Unit) int {
	n := 0
	for _, u := range units {
		n += len(u)
	}
	return n
}
