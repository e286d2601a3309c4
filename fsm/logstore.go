package fsm

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	wal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/metadb"
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
)

// LogStoreEnv names the environment variable DefaultConfig reads for
// Config.LogStore, so the store can be chosen for a whole node without new
// plumbing (an experiment switch: raftstream has no flag for it yet).
const LogStoreEnv = "RAFTSTREAM_RAFT_LOG_STORE"

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
func openRaftStore(kind, dir string, noSync bool, log *slog.Logger, level slog.Level) (raftStore, error) {
	boltPath := filepath.Join(dir, "raft.db")
	walDir := filepath.Join(dir, "wal")
	switch kind {
	case "", LogStoreBolt:
		if exists(walDir) {
			return nil, fmt.Errorf("log store %q requested but %s holds a %q log", LogStoreBolt, dir, LogStoreWAL)
		}
		return raftboltdb.New(raftboltdb.Options{Path: boltPath, NoSync: noSync})
	case LogStoreWAL:
		if noSync {
			return nil, fmt.Errorf("log store %q does not support NoSync", LogStoreWAL)
		}
		if exists(boltPath) {
			return nil, fmt.Errorf("log store %q requested but %s holds a %q log", LogStoreWAL, dir, LogStoreBolt)
		}
		if err := os.MkdirAll(walDir, 0o755); err != nil {
			return nil, err
		}
		meta := &metadb.BoltMetaDB{}
		w, err := wal.Open(walDir,
			wal.WithMetaStore(meta),
			wal.WithSegmentSize(walSegmentSize),
			wal.WithLogger(NewHCLogger(log, level).Named("wal")))
		if err != nil {
			meta.Close()
			return nil, err
		}
		return &walStore{WAL: w, meta: meta}, nil
	default:
		return nil, fmt.Errorf("unknown log store %q (want %q or %q)", kind, LogStoreBolt, LogStoreWAL)
	}
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
