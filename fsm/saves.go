package fsm

import (
	"sync/atomic"
	"time"
)

// What a replica reports about its snapshots (Redis's INFO persistence,
// with a Raft snapshot in the role of an RDB save): how many commands it
// applied since the state its newest snapshot holds, when that snapshot
// was taken, whether one is being written. Local statistics: nothing here
// is replicated state.

// saveStats is a replica's snapshot statistics. changes is added to by
// apply; the rest by Snapshot, Persist and Restore.
type saveStats struct {
	changes atomic.Uint64 // commands applied without error
	saved   atomic.Uint64 // changes when the newest persisted snapshot was taken
	lastAt  atomic.Int64  // unix seconds of the newest persisted snapshot; its start before
	lastDur atomic.Int64  // ns the last Persist took
	lastErr atomic.Bool   // the last Persist failed
	saves   atomic.Uint64 // snapshots persisted
	active  atomic.Int32  // snapshots taken and not released
	started atomic.Int64  // unix ns the running one was taken at
}

// pendingSave is one snapshot being written: the changes it holds.
type pendingSave struct {
	st      *saveStats
	changes uint64
	start   time.Time
	once    atomic.Bool
}

func (s *saveStats) init() {
	s.lastAt.Store(time.Now().Unix())
}

// begin notes a snapshot taken now (Snapshot: apply is not running).
func (s *saveStats) begin() *pendingSave {
	p := &pendingSave{st: s, changes: s.changes.Load(), start: time.Now()}
	s.active.Add(1)
	s.started.Store(p.start.UnixNano())
	return p
}

// persisted records the outcome of writing p.
func (p *pendingSave) persisted(err error) {
	if p == nil {
		return
	}
	s := p.st
	s.lastDur.Store(int64(time.Since(p.start)))
	s.lastErr.Store(err != nil)
	if err == nil {
		s.saves.Add(1)
		s.saved.Store(p.changes)
		s.lastAt.Store(time.Now().Unix())
	}
}

// release ends p (once, whether or not it was persisted).
func (p *pendingSave) release() {
	if p != nil && p.once.CompareAndSwap(false, true) {
		p.st.active.Add(-1)
	}
}

// restored notes that the state is now a snapshot's (m.mu held).
func (s *saveStats) restored() { s.saved.Store(s.changes.Load()) }

// SaveStats is a replica's snapshot statistics (Stats.Saves).
type SaveStats struct {
	// ChangesSinceSave counts the commands applied (without error) since
	// the state the newest snapshot holds: Redis's
	// rdb_changes_since_last_save.
	ChangesSinceSave uint64
	// LastSave is when the newest snapshot was persisted (the replica's
	// start before any).
	LastSave time.Time
	// LastDuration is how long writing the last snapshot took (when
	// Saves > 0 or LastFailed); LastFailed says it failed.
	LastDuration time.Duration
	LastFailed   bool
	// Saves counts the snapshots persisted since the replica opened.
	Saves uint64
	// InProgress is set while a snapshot is being written, since
	// InProgressSince.
	InProgress      bool
	InProgressSince time.Time
}

func (s *saveStats) report() SaveStats {
	r := SaveStats{
		ChangesSinceSave: s.changes.Load() - s.saved.Load(),
		LastSave:         time.Unix(s.lastAt.Load(), 0),
		LastDuration:     time.Duration(s.lastDur.Load()),
		LastFailed:       s.lastErr.Load(),
		Saves:            s.saves.Load(),
		InProgress:       s.active.Load() > 0,
	}
	if r.InProgress {
		r.InProgressSince = time.Unix(0, s.started.Load())
	}
	return r
}
