package fsm

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	wal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/metadb"
	"github.com/raftstream/raftstream/fsm/nodelog"
)

// Log store kinds for Config.LogStore.
const (
	// LogStoreBolt keeps the Raft log and stable store in one bbolt file
	// (raft.db). Each StoreLogs is a bbolt commit: two fsyncs.
	LogStoreBolt = "bolt"
	// LogStoreWAL keeps the Raft log in hashicorp/raft-wal segment files
	// (wal/): CRC-framed append-only records, one fsync per StoreLogs, torn
	// tails truncated on open, whole segments deleted on compaction. The
	// stable store (term, vote) and the segment index live in wal/wal-meta.db
	// (bbolt, fsynced on every change).
	LogStoreWAL = "wal"
	// LogStoreNode keeps the Raft log in the node's shared log
	// (Config.NodeLog, fsm/nodelog): every shard's entries in one
	// append-only log, group-committed with one fdatasync per write for all
	// shards. The term and vote live in the shard directory's "stable" file.
	LogStoreNode = "node"
)

// DefaultLogStore is the kind a new shard directory gets when
// Config.LogStore is "" and a node log is given.
const DefaultLogStore = LogStoreNode

// ErrStorageFault is wrapped by the errors of a replica whose Raft log store
// failed (StorageFaultError).
var ErrStorageFault = errors.New("raft log store failed")

// StorageFaultError is returned for proposals and reads on a replica whose
// Raft log store failed a write: nothing was proposed.
type StorageFaultError struct {
	Shard int
	Err   error // the store's error
}

func (e *StorageFaultError) Error() string {
	return fmt.Sprintf("shard %d: the Raft log store failed on this node (%v); this replica stopped and refuses commands, nothing was applied (restart the node once the disk is fixed)", e.Shard, e.Err)
}

func (e *StorageFaultError) Unwrap() []error { return []error{ErrStorageFault, e.Err} }

// faultStore wraps a shard's store and makes a failed log write fatal to
// the replica: the first error (fsync, disk full, I/O) is recorded, the
// shard is told (it logs the fault and shuts its Raft instance down, so it
// neither leads nor votes on a log it cannot extend), and every later log
// write fails with the same error without touching the file: after a failed
// fsync the file's content is unknown, and a retried fsync can report
// success for pages the kernel already dropped. hashicorp/raft answers the
// entries of the failed write with the error (the client is told the
// outcome is unknown) and steps down. Stable-store writes (term, vote) pass
// through: raft panics if they fail, a crash the restart recovers from.
type faultStore struct {
	raftStore
	dir       string
	faultFile string      // Config.LogStoreFaultFile, "" = no injection
	injectNow atomic.Bool // tests in this package: fail writes from now on
	fault     atomic.Pointer[error]
	mu        sync.Mutex
	onFault   func(error) // set by the shard once open; called once
	pending   error       // a fault seen before onFault was set
}

func newFaultStore(st raftStore, dir string) *faultStore {
	return &faultStore{raftStore: st, dir: dir}
}

// injected reports whether a test injects a fault now.
func (f *faultStore) injected() bool {
	if f.injectNow.Load() {
		return true
	}
	if f.faultFile == "" {
		return false
	}
	_, err := os.Stat(f.faultFile)
	return err == nil
}

// failed records err (if not nil) as the store's fault.
func (f *faultStore) failed(err error) error {
	if err == nil {
		return nil
	}
	if f.fault.CompareAndSwap(nil, &err) {
		f.mu.Lock()
		cb := f.onFault
		if cb == nil {
			f.pending = err
		}
		f.mu.Unlock()
		if cb != nil {
			cb(err)
		}
	}
	return err
}

// notify sets the fault callback (and calls it for a fault already seen).
func (f *faultStore) notify(cb func(error)) {
	f.mu.Lock()
	f.onFault = cb
	err := f.pending
	f.pending = nil
	f.mu.Unlock()
	if err != nil {
		cb(err)
	}
}

// Fault is the store's first write error, nil while healthy.
func (f *faultStore) Fault() error {
	if p := f.fault.Load(); p != nil {
		return *p
	}
	return nil
}

func (f *faultStore) StoreLog(l *raft.Log) error { return f.StoreLogs([]*raft.Log{l}) }

// IsMonotonic passes the store's raft.MonotonicLogStore answer through:
// raft asks the outermost store whether to clear the log after installing
// a snapshot (a monotonic store refuses the gap raft would leave).
func (f *faultStore) IsMonotonic() bool {
	m, ok := f.raftStore.(raft.MonotonicLogStore)
	return ok && m.IsMonotonic()
}

func (f *faultStore) StoreLogs(logs []*raft.Log) error {
	if err := f.Fault(); err != nil {
		return err
	}
	err := f.raftStore.StoreLogs(logs)
	if err == nil && f.injected() {
		err = &os.PathError{Op: "fsync", Path: f.dir, Err: syscall.EIO}
	}
	return f.failed(err)
}

func (f *faultStore) DeleteRange(lo, hi uint64) error {
	if err := f.Fault(); err != nil {
		return err
	}
	return f.failed(f.raftStore.DeleteRange(lo, hi))
}

// storageFailed is the shard's reaction to its store's first write error:
// log it, and stop the replica's Raft instance (not from the goroutine
// that called the store: that is raft's own, which Shutdown waits for).
func (s *Shard) storageFailed(err error) {
	s.log.Error("Raft log store write failed: this replica stops (it refuses commands until the node is restarted on a working disk)", "err", err)
	go func() { _ = s.raft.Shutdown().Error() }()
}

// StorageFault is the error that stopped this replica (its Raft log store
// failed a write), nil while healthy.
func (s *Shard) StorageFault() error {
	fs, ok := s.store.(*faultStore)
	if !ok {
		return nil
	}
	if err := fs.Fault(); err != nil {
		return &StorageFaultError{Shard: s.cfg.ShardID, Err: err}
	}
	return nil
}

// walSegmentSize is the size of one raft-wal segment file. Entries are
// batches of up to MaxBatchBytes, so segments hold a few dozen at least;
// smaller than raft-wal's 64 MiB default because a node has many shards.
const walSegmentSize = 16 << 20

// raftStore is what a shard needs from its storage: Raft's log and stable
// stores, closed together.
type raftStore interface {
	raft.LogStore
	raft.StableStore
	io.Closer
}

// openRaftStore opens the log and stable store of kind in dir. A directory
// that already holds the other kind's files is refused: switching kinds
// would silently start from an empty log and vote.
func openRaftStore(kind, dir string, noSync bool, nl *nodelog.Log, raftLog hclog.Logger) (raftStore, error) {
	boltPath := filepath.Join(dir, "raft.db")
	walDir := filepath.Join(dir, "wal")
	has := ""
	switch {
	case exists(boltPath):
		has = LogStoreBolt
	case exists(walDir):
		has = LogStoreWAL
	case nodelog.HasReplica(dir):
		has = LogStoreNode
	}
	if kind == "" {
		switch {
		case has != "":
			kind = has
		case nl != nil:
			kind = DefaultLogStore
		default:
			kind = LogStoreBolt
		}
	}
	if has != "" && has != kind {
		return nil, fmt.Errorf("log store %q requested but %s holds a %q log", kind, dir, has)
	}
	switch kind {
	case LogStoreNode:
		if nl == nil {
			return nil, fmt.Errorf("log store %q needs the node log (Config.NodeLog)", LogStoreNode)
		}
		rep, err := nl.OpenReplica(dir)
		if err != nil {
			return nil, err
		}
		return newFaultStore(rep, dir), nil
	case LogStoreBolt:
		st, err := raftboltdb.New(raftboltdb.Options{Path: boltPath, NoSync: noSync})
		if err != nil {
			return nil, err
		}
		return newFaultStore(st, boltPath), nil
	case LogStoreWAL:
		if noSync {
			return nil, fmt.Errorf("log store %q does not support NoSync", LogStoreWAL)
		}
		if err := os.MkdirAll(walDir, 0o755); err != nil {
			return nil, err
		}
		meta := &metadb.BoltMetaDB{}
		w, err := wal.Open(walDir,
			wal.WithMetaStore(meta),
			wal.WithSegmentSize(walSegmentSize),
			wal.WithLogger(raftLog.Named("wal")))
		if err != nil {
			meta.Close()
			return nil, err
		}
		return newFaultStore(&walStore{WAL: w, meta: meta}, walDir), nil
	default:
		return nil, checkLogStore(kind)
	}
}

// checkLogStore reports whether kind names a log store.
func checkLogStore(kind string) error {
	switch kind {
	case LogStoreNode, LogStoreBolt, LogStoreWAL:
		return nil
	}
	return fmt.Errorf("unknown log store %q (want %q, %q or %q)", kind, LogStoreNode, LogStoreBolt, LogStoreWAL)
}

// walStore closes the WAL's meta database too: raft-wal v0.4.0's Close
// leaves it open, and its file lock would block the next Open of the same
// directory in this process (a shard reopened after Close).
type walStore struct {
	*wal.WAL
	meta *metadb.BoltMetaDB
}

// Close closes the WAL, then its meta database.
func (w *walStore) Close() error { return errors.Join(w.WAL.Close(), w.meta.Close()) }

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
