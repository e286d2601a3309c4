package fsm

import (
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"

	"github.com/raftstream/raftstream/engine"
)

// machine is one shard's raft.BatchingFSM: it owns the engine and applies
// decoded batches to it. Raft calls ApplyBatch, Snapshot and Restore from its
// FSM goroutine, one at a time; readers (Shard.Read, StaleRead) take mu's
// read side from other goroutines.
type machine struct {
	shard  int
	notify func(shard int, keys []string)
	log    *slog.Logger

	// mu guards eng and lastNow: apply and restore hold it for writing,
	// reads and Snapshot for reading.
	mu  sync.RWMutex
	eng *engine.Engine
	// lastNow is the largest timestamp applied so far (unix ms).
	// Invariant: non-decreasing across applies, restarts (persisted in
	// snapshots) and leaders, so engine time never runs backwards.
	lastNow int64
	// appliedIndex and appliedTerm are the position of the last entry
	// ApplyBatch was given (0 after Restore until the next): the log
	// position eng reflects, for Backup.
	appliedIndex, appliedTerm uint64

	// proposed maps the entries this replica proposed and has not seen
	// answered (the address of their data's first byte) to their
	// proposals. On the leader raft hands ApplyBatch the very []byte given
	// to Apply, so an entry proposed here is applied from its batch
	// without decoding it again (the same commands, byte for byte, since
	// the entry was encoded from them and is never modified), and its
	// proposals are answered right there (entry.finish).
	proposed sync.Map // *byte → *entry
	// decoded counts the entries applied by decoding them (tests).
	decoded atomic.Int64
	// arena backs the batch batchOf decodes, until ApplyBatch has applied
	// it (apply goroutine only). No reply refers to a batch's slices (the
	// engine copies what it keeps), so the arena is reset right after.
	arena decodeArena

	// saves is what INFO persistence reports (saves.go): local statistics,
	// not replicated state.
	saves saveStats
	// mig is the shard's slot-move state (migrate.go), guarded by mu like
	// eng; nil until the shard first takes part in a move.
	mig *migration
	// keysOf returns the positions of a command's keys (Config.KeysOf);
	// nil: the shard cannot check keys and refuses to fence slots.
	keysOf func(argv [][]byte) []int
}

// rememberProposed records that data, about to be proposed, is e.
func (m *machine) rememberProposed(data []byte, e *entry) {
	if len(data) > 0 {
		m.proposed.Store(&data[0], e)
	}
}

// forgetProposed drops data's batch once the proposal is answered.
func (m *machine) forgetProposed(data []byte) {
	if len(data) > 0 {
		m.proposed.Delete(&data[0])
	}
}

// batchOf is l's batch: the one proposed here (with its entry) if l
// carries that data, else decoded from it.
func (m *machine) batchOf(l *raft.Log) (*Batch, *entry, error) {
	if len(l.Data) > 0 {
		if v, ok := m.proposed.Load(&l.Data[0]); ok {
			e := v.(*entry)
			return e.batch, e, nil
		}
	}
	m.decoded.Add(1)
	b, err := decodeBatch(l.Data, &m.arena)
	if err != nil {
		m.arena.reset() // whatever was cut before the damage
	}
	return b, nil, err
}

var _ raft.BatchingFSM = (*machine)(nil)

func newMachine(shard int, cfg engine.Config, notify func(int, []string), log *slog.Logger) *machine {
	m := &machine{shard: shard, notify: notify, log: log, eng: engine.New(cfg)}
	m.saves.init()
	return m
}

// Apply implements raft.FSM for a single entry.
func (m *machine) Apply(l *raft.Log) any { return m.ApplyBatch([]*raft.Log{l})[0] }

// ApplyBatch implements raft.BatchingFSM. For every LogCommand entry the
// result is a [][]engine.Reply (one reply slice per unit, one reply per
// command); raft hands it to the proposer's ApplyFuture. Other entry types
// get nil. An entry this replica proposed has its proposals answered here,
// once the lock is released, rather than after raft's future and the
// batcher's waiter have passed the result on. An entry that does not
// decode panics: skipping it would let this replica diverge from its peers
// silently.
func (m *machine) ApplyBatch(logs []*raft.Log) []any {
	out := make([]any, len(logs))
	var keys []string
	var seen map[string]struct{}
	var mine []appliedEntry
	m.mu.Lock()
	for i, l := range logs {
		m.appliedIndex, m.appliedTerm = l.Index, l.Term
		if l.Type != raft.LogCommand {
			continue
		}
		b, e, err := m.batchOf(l)
		if err != nil {
			m.mu.Unlock()
			m.log.Error("undecodable log entry; stopping replica", "shard", m.shard, "index", l.Index, "term", l.Term, "err", err)
			panic(fmt.Sprintf("fsm: shard %d: log entry %d (term %d): %v", m.shard, l.Index, l.Term, err))
		}
		res := m.applyLocked(b)
		out[i] = res
		if e != nil {
			mine = append(mine, appliedEntry{e, res, l.Index})
		}
		if b == &m.arena.batch {
			m.arena.reset()
		}
		for _, k := range m.eng.TakeSignaled() {
			if seen == nil {
				seen = make(map[string]struct{})
			}
			if _, dup := seen[k]; !dup {
				seen[k] = struct{}{}
				keys = append(keys, k)
			}
		}
	}
	m.mu.Unlock()
	for _, a := range mine {
		a.e.finish(a.res, a.index)
	}
	if len(keys) > 0 && m.notify != nil {
		m.notify(m.shard, keys)
	}
	return out
}

// appliedEntry is an entry proposed here, applied, to be finished.
type appliedEntry struct {
	e     *entry
	res   [][]engine.Reply
	index uint64
}

// applyLocked runs one batch at now = max(b.TS, lastNow). m.mu is held.
func (m *machine) applyLocked(b *Batch) [][]engine.Reply {
	now := max(b.TS, m.lastNow)
	m.lastNow = now
	m.eng.Advance(now) // reads never run before the log's time (expiry)
	if b.IsFence() {
		return nil
	}
	res := make([][]engine.Reply, len(b.Units))
	var changes uint64
	for i, u := range b.Units {
		if refused := m.checkUnit(u); refused != nil {
			res[i] = refused
			continue
		}
		replies := make([]engine.Reply, len(u))
		for j, argv := range u {
			replies[j] = m.execLocked(now, argv)
			if _, failed := replies[j].(*engine.Error); !failed {
				changes++
			}
		}
		res[i] = replies
	}
	m.saves.changes.Add(changes)
	return res
}

// execLocked runs one command. Every log command is the engine's (CONFIG SET
// and DEBUG RELOAD included), but for the slot-move commands (RSSLOTS, a
// unit's ASKING marker: migrate.go), which change the FSM's own state.
func (m *machine) execLocked(now int64, argv [][]byte) engine.Reply {
	if execHook != nil {
		if r, ok := execHook(m.eng, now, argv); ok {
			return r
		}
	}
	if r, ok := m.slotLogCommand(argv); ok {
		return r
	}
	return m.eng.Exec(now, argv)
}

// execHook, if set, may claim a command before the engine sees it. Tests
// only (set before any shard opens): it lets fsm tests drive replicated state
// with commands of their own, independent of the engine's command set.
var execHook func(e *engine.Engine, now int64, argv [][]byte) (engine.Reply, bool)

// Snapshot implements raft.FSM: a cheap point-in-time view of the engine
// plus the FSM's own state; Persist serialises it while applies continue.
func (m *machine) Snapshot() (raft.FSMSnapshot, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	es := snapshotEngine(m.eng)
	return &fsmSnapshot{hdr: snapshotHeader{LastNow: m.lastNow, Shard: m.shard, Engine: m.eng.Config(),
		Migration: m.mig.clone()}, eng: es, save: m.saves.begin()}, nil
}

// Restore implements raft.FSM: it replaces the engine and lastNow with the
// snapshot's. On error the current state is kept (raft then fails).
func (m *machine) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	hdr, eng, err := readSnapshot(rc)
	if err != nil {
		return fmt.Errorf("fsm: shard %d: restore: %w", m.shard, err)
	}
	eng.Advance(hdr.LastNow)
	m.mu.Lock()
	m.eng, m.lastNow, m.mig = eng, hdr.LastNow, hdr.Migration
	m.saves.restored()
	m.appliedIndex, m.appliedTerm = 0, 0
	m.mu.Unlock()
	return nil
}

// view runs fn on the engine under the read lock.
func (m *machine) view(fn func(*engine.Engine)) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	fn(m.eng)
}
