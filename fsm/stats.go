package fsm

import (
	"strconv"
	"strings"
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
	// is the size of the newest snapshot on disk (0 if none) and
	// LastSnapshotAt when it was written (zero if none): taken here, or
	// installed from the leader.
	Snapshots         uint64
	LastSnapshotBytes int64
	LastSnapshotAt    time.Time
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
	// Saves describes the replica's snapshots as INFO persistence reports
	// them (saves.go).
	Saves SaveStats
}

// batchBounds are the bounds of BatchCommands: 1..16384 commands, doubling.
var batchBounds = doubling(1, 15)

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
	s.stats.commit = NewHistogram(LatencyBuckets)
	s.stats.snapshot = NewHistogram(LatencyBuckets)
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
// latency when err is nil, in the stats and for the batcher's gather
// (lastCommit).
func (s *Shard) noteApplied(since time.Time, err error) {
	s.stats.inflight.Add(-1)
	if err == nil {
		d := time.Since(since)
		s.stats.commit.Observe(d.Seconds())
		s.lastCommit.Store(int64(d))
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
		Saves:               s.m.saves.report(),
	}
	if err := s.StorageFault(); err != nil {
		st.StorageFault = err.Error()
	}
	if metas, err := s.snaps.List(); err == nil && len(metas) > 0 {
		st.LastSnapshotBytes = metas[0].Size
		st.LastSnapshotAt = snapshotTime(metas[0].ID)
	}
	return st
}

// snapshotTime is when raft's file store wrote the snapshot with this ID:
// it names a snapshot "term-index-unixms" (snapshotName in raft's
// file_snapshot.go). Zero for an ID of another form.
func snapshotTime(id string) time.Time {
	i := strings.LastIndexByte(id, '-')
	ms, err := strconv.ParseInt(id[i+1:], 10, 64)
	if i < 0 || err != nil || ms <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

// batchCommands counts the commands of an entry's units.
func batchCommands(units []Unit) int {
	n := 0
	for _, u := range units {
		n += len(u)
	}
	return n
}
