package fsm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/raftstream/raftstream/fsm/nodelog"
)

// Shard is one replica of one shard: a Raft group member, its FSM (the
// engine) and its proposal batcher. All methods are safe for concurrent use.
type Shard struct {
	cfg   Config
	log   *slog.Logger
	m     *machine
	raft  *raft.Raft
	store raftStore
	logs  *storeSignal // what raft writes the log through
	snaps *raft.FileSnapshotStore

	// subMu orders Submit against Close: Submit enqueues under the read
	// side, Close flips closed under the write side, so after Close no
	// proposal can enter the queue and the batcher can drain it for good.
	subMu  sync.RWMutex
	closed bool
	queue  chan *proposal
	// inflight is a semaphore of MaxInFlight proposed, unapplied entries.
	inflight   chan struct{}
	shutdownCh chan struct{}
	loopDone   chan struct{}
	// raftDown is closed once raft.Shutdown has completed: a future still
	// unanswered then never will be (outcome unknown).
	raftDown chan struct{}
	waiters  sync.WaitGroup

	closeOnce sync.Once
	closeErr  error

	stats shardStats // counters for Stats (stats.go)
	// debug is Config.InjectBug resolved (debug.go); zero in production.
	debug debugHooks

	// transferBusySince is when raft's leadership transfer flag was first
	// reported up with nothing seen to clear it since (unix ns; 0: not
	// up). See transfer.go.
	transferBusySince atomic.Int64

	// answered is how many proposals the last applied entry answered, and
	// lastCommit how long that entry took from proposal to apply (ns): what
	// the batcher's gather waits for and how long (gatherWait).
	answered   atomic.Int32
	lastCommit atomic.Int64
}

// Open opens (or creates) the shard replica in cfg.Dir and starts Raft and
// the batcher. A fresh replica has no configuration: call BootstrapIfEmpty on
// the founding members, or have the leader add it.
func Open(cfg Config) (*Shard, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	log = log.With("shard", cfg.ShardID)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("fsm: shard %d: %w", cfg.ShardID, err)
	}
	if cfg.RaftLogger == nil {
		cfg.RaftLogger = hclog.NewNullLogger()
	}
	store, err := openRaftStore(cfg.LogStore, cfg.Dir, cfg.NoSync, cfg.NodeLog, cfg.RaftLogger)
	if err != nil {
		return nil, fmt.Errorf("fsm: shard %d: open log store: %w", cfg.ShardID, err)
	}
	if fs, ok := store.(*faultStore); ok {
		fs.faultFile = cfg.LogStoreFaultFile // before raft writes through it
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(cfg.Dir, cfg.SnapshotRetain, cfg.RaftLogger.Named("snapshot"))
	if err != nil {
		store.Close()
		return nil, fmt.Errorf("fsm: shard %d: open snapshot store: %w", cfg.ShardID, err)
	}
	cache := newLogCache(store, cfg.LogCacheEntries, cfg.LogCacheBytes)
	logs := &storeSignal{logCache: cache, beginCh: make(chan struct{}, 1), endCh: make(chan struct{}, 1), early: cfg.EarlyReplicate}
	m := newMachine(cfg.ShardID, cfg.Engine, cfg.Notify, log)
	m.keysOf = cfg.KeysOf
	r, err := raft.NewRaft(cfg.raftConfig(), m, logs, store, snaps, cfg.Transport)
	if err != nil {
		store.Close()
		return nil, fmt.Errorf("fsm: shard %d: start raft: %w", cfg.ShardID, err)
	}
	logs.raft.Store(r)
	s := &Shard{
		cfg: cfg, log: log, m: m, raft: r, store: store, logs: logs, snaps: snaps,
		queue:      make(chan *proposal, cfg.QueueDepth),
		inflight:   make(chan struct{}, cfg.MaxInFlight),
		shutdownCh: make(chan struct{}),
		loopDone:   make(chan struct{}),
		raftDown:   make(chan struct{}),
		debug:      newDebugHooks(cfg.InjectBug),
	}
	if fs, ok := store.(*faultStore); ok {
		fs.notify(s.storageFailed)
	}
	s.initStats()
	go s.run()
	return s, nil
}

// BootstrapIfEmpty makes servers the group's initial configuration if this
// replica has no Raft state at all (no log, no term, no snapshot); otherwise
// it does nothing. Call it on every founding member with the same servers.
func (s *Shard) BootstrapIfEmpty(servers []raft.Server) error {
	has, err := raft.HasExistingState(s.store, s.store, s.snaps)
	if err != nil {
		return fmt.Errorf("fsm: shard %d: %w", s.cfg.ShardID, err)
	}
	if has {
		return nil
	}
	err = s.raft.BootstrapCluster(raft.Configuration{Servers: servers}).Error()
	if errors.Is(err, raft.ErrCantBootstrap) {
		return nil
	}
	return err
}

// Raft exposes the Raft instance for membership changes and leadership
// transfer (cluster/). Do not Apply to it directly: that bypasses the entry
// encoding.
func (s *Shard) Raft() *raft.Raft { return s.raft }

// NodeLogSegmentsHeld is how many node log segments the shard's Raft log
// keeps from being deleted besides the current one
// (nodelog.Replica.SegmentsHeld); 0 for the other log stores.
func (s *Shard) NodeLogSegmentsHeld() int {
	st := s.store
	if fs, ok := st.(*faultStore); ok {
		st = fs.raftStore
	}
	if rep, ok := st.(*nodelog.Replica); ok {
		return rep.SegmentsHeld()
	}
	return 0
}

// ShardID is the shard number.
func (s *Shard) ShardID() int { return s.cfg.ShardID }

// Close stops the batcher (queued proposals fail with ErrShutdown), shuts
// Raft down (in-flight ones fail with ErrUnknownOutcome) and closes the log
// store. The transport is the caller's. Safe to call more than once.
func (s *Shard) Close() error {
	s.closeOnce.Do(func() {
		s.subMu.Lock()
		s.closed = true
		close(s.shutdownCh)
		s.subMu.Unlock()
		<-s.loopDone
		err := s.raft.Shutdown().Error()
		close(s.raftDown)
		s.waiters.Wait()
		s.closeErr = errors.Join(err, s.store.Close())
	})
	return s.closeErr
}

// TakeSnapshot asks Raft for a snapshot now and waits for it (the node
// schedules these across its shards). raft.ErrNothingNewToSnapshot is
// returned as is.
func (s *Shard) TakeSnapshot() error { return s.snapshotTimed() }

// IsLeader reports whether this replica currently believes it leads.
func (s *Shard) IsLeader() bool { return s.raft.State() == raft.Leader }

// Leader returns the leader's server ID and address as known here; empty
// during an election.
func (s *Shard) Leader() (id, addr string) {
	a, i := s.raft.LeaderWithID()
	return string(i), string(a)
}

// Status is a replica's Raft state, for INFO.
type Status struct {
	Role         string // leader, follower, candidate, shutdown
	Term         uint64
	CommitIndex  uint64
	AppliedIndex uint64
	LastIndex    uint64
	LeaderID     string
	LeaderAddr   string
}

// Status reports the replica's Raft state.
func (s *Shard) Status() Status {
	id, addr := s.Leader()
	return Status{
		Role:         strings.ToLower(s.raft.State().String()),
		Term:         s.raft.CurrentTerm(),
		CommitIndex:  s.raft.CommitIndex(),
		AppliedIndex: s.raft.AppliedIndex(),
		LastIndex:    s.raft.LastIndex(),
		LeaderID:     id,
		LeaderAddr:   addr,
	}
}

// WaitForLeader waits until the group has a known leader and returns it.
func (s *Shard) WaitForLeader(ctx context.Context) (id, addr string, err error) {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		if id, addr = s.Leader(); id != "" {
			return id, addr, nil
		}
		select {
		case <-ctx.Done():
			return "", "", fmt.Errorf("fsm: shard %d: no leader: %w", s.cfg.ShardID, ctx.Err())
		case <-s.shutdownCh:
			return "", "", ErrShutdown
		case <-t.C:
		}
	}
}

// storeSignal is the log store raft writes through: the log cache over the
// shard's store. It counts the StoreLogs calls begun and ended and signals
// both, so that the batcher can form the next entry when the leader loop is
// about to take it rather than one disk write earlier (Shard.linger).
type storeSignal struct {
	*logCache
	begun, ended   atomic.Uint64
	beginCh, endCh chan struct{} // capacity 1: "a count moved"

	// early is Config.EarlyReplicate; raft the group's instance, once
	// NewRaft returned.
	early func(prevTerm, commit uint64, logs []*raft.Log)
	raft  atomic.Pointer[raft.Raft]
}

func (l *storeSignal) StoreLog(log *raft.Log) error { return l.StoreLogs([]*raft.Log{log}) }

func (l *storeSignal) StoreLogs(logs []*raft.Log) error {
	l.begun.Add(1)
	poke(l.beginCh)
	if storeHook != nil {
		storeHook(logs)
	}
	l.replicateEarly(logs)
	err := l.logCache.StoreLogs(logs)
	l.ended.Add(1)
	poke(l.endCh)
	return err
}

// replicateEarly hands logs to Config.EarlyReplicate when this replica
// writes them as the leader. raft calls StoreLogs from its main goroutine,
// the one that also changes its state, so State is exact here: Leader
// means raft's leader loop is appending its own new entries (a follower
// storing its leader's entries is always in state Follower), all of the
// current term.
func (l *storeSignal) replicateEarly(logs []*raft.Log) {
	if l.early == nil || len(logs) == 0 {
		return
	}
	r := l.raft.Load()
	if r == nil || r.State() != raft.Leader {
		return
	}
	var prevTerm uint64
	if prev := logs[0].Index - 1; prev > 0 {
		var lg raft.Log
		if err := l.logCache.GetLog(prev, &lg); err != nil {
			return // compacted away: raft's own replication will do
		}
		prevTerm = lg.Term
	}
	l.early(prevTerm, r.CommitIndex(), logs)
}

// storeHook, if set, runs before every log write. Tests only (set before
// any shard opens): it stands in for a slow disk.
var storeHook func(logs []*raft.Log)

// poke signals ch without blocking (a pending signal is enough).
func poke(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
