package fsm

import (
	"context"

	"github.com/raftstream/raftstream/engine"
)

// Backup is a shard's state at one applied log position, as Shard.Backup
// takes it on the leader: what `raftstream backup` copies, one shard at a
// time.
type Backup struct {
	// Index and Term are those of the last log entry applied into the
	// view: the state is exactly the log up to Index.
	Index, Term uint64
	// Now is the shard's clock at that point (unix ms, the largest entry
	// time applied; see machine.lastNow).
	Now int64
	// Engine is the engine's point-in-time view. Its WriteTo encodes it
	// (engine.Restore decodes it) while the shard keeps applying: it holds
	// no lock, and the live engine copies a stream node before changing one
	// the view shares.
	Engine *engine.Snapshot
}

// Backup returns the shard's state at a linearizable point: only on the
// leader, and only after a read fence proposed after Backup was called has
// applied (as Read), so every write acknowledged before the call is in it,
// and nothing that was not committed. Errors are Read's.
//
// The view is taken under the FSM's write lock, which holds apply up for
// engine.Snapshot's cost (keys, stream node headers and consumer-group
// state; not the entries), the same pause as a Raft snapshot. Exclusive
// rather than shared because engine.Snapshot marks the streams' nodes as
// shared, which Raft's own Snapshot, under the read lock, does too.
func (s *Shard) Backup(ctx context.Context) (*Backup, error) {
	if err := s.Read(ctx, func(*engine.Engine) {}); err != nil {
		return nil, err
	}
	return s.m.backupView(), nil
}

// backupView takes the engine's view with the position it reflects.
func (m *machine) backupView() *Backup {
	m.mu.Lock()
	defer m.mu.Unlock()
	return &Backup{Index: m.appliedIndex, Term: m.appliedTerm, Now: m.lastNow, Engine: m.eng.Snapshot()}
}
