package fsm

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/raftstream/raftstream/engine"
	"github.com/raftstream/raftstream/fsm/nodelog"
)

// Config configures one shard replica (one Raft group member). Build it from
// DefaultConfig and set the identity fields; Open calls Validate.
type Config struct {
	// ShardID is the shard number this replica serves; passed to Notify.
	ShardID int
	// Dir is the shard's data directory: raft.db (log + stable store, bbolt)
	// and snapshots/. Created if missing. One Dir per shard per node.
	Dir string
	// LocalID is this replica's Raft server ID (unique in the group; a node
	// whose disk was wiped must come back under a new ID).
	LocalID raft.ServerID
	// Transport carries this group's Raft RPCs. The caller owns it: Close
	// does not close it.
	Transport raft.Transport
	// EarlyReplicate, if set, is handed every batch of entries this replica
	// is about to write to its log as the group's leader, with the term of
	// the entry before them and the group's commit index, before the write
	// starts. It runs on raft's main goroutine and must not block. The
	// transport sends the entries to caught-up followers, so that their log
	// writes run while the leader's does (cluster's early.go); the leader
	// still counts itself towards commitment only once its own write is
	// durable.
	EarlyReplicate func(prevTerm, commit uint64, logs []*raft.Log)
	// Logger receives this shard's own logs (with a "shard" attribute
	// added). nil means slog.Default().
	Logger *slog.Logger
	// RaftLogger receives hashicorp/raft's logs for this shard: its Raft
	// instance ("raft"), snapshot store ("snapshot") and raft-wal log store
	// ("wal"), each Named beneath it. The caller chooses its destination and
	// level (raft is very chatty at DEBUG). nil discards them.
	RaftLogger hclog.Logger
	// Engine is the initial engine configuration of an empty shard. After
	// that the configuration is replicated state (CONFIG SET through the log,
	// snapshots).
	Engine engine.Config

	// MaxBatchCommands bounds the commands packed into one log entry (a unit
	// is never split, so a single larger unit still goes alone).
	MaxBatchCommands int
	// MaxBatchBytes bounds the encoded argument bytes of one log entry (same
	// rule for a single oversized unit).
	MaxBatchBytes int
	// MaxInFlight is how many log entries the batcher keeps proposed but not
	// yet applied. More overlaps fsync with batching but splits the waiting
	// commands into smaller entries (about submitters / (MaxInFlight+1)
	// each); 1 makes the fewest entries, log writes and AppendEntries per
	// command.
	MaxInFlight int
	// MaxLinger bounds how long the batcher, after raft took an entry, waits
	// for the leader to finish writing it before it forms the next entry
	// (which then carries the commands that arrived during the write; see
	// Shard.linger). 0 forms the next entry at once.
	MaxLinger time.Duration
	// MaxGather bounds how long the batcher, once the entry in flight has
	// applied, waits for the submitters that entry answered to send their
	// next commands before it forms the next entry (never longer than the
	// last entry's commit time). Without it, at one command in flight
	// per client, clients split into two cohorts that take turns: each
	// waits out the other's entry before its own forms. 0 forms the next
	// entry at once.
	MaxGather time.Duration
	// QueueDepth bounds the submissions waiting to be batched; Submit fails
	// with ErrBusy when the queue is full.
	QueueDepth int
	// EnqueueTimeout bounds how long one raft.Apply call may wait for Raft to
	// accept the entry (ErrEnqueueTimeout → ErrBusy, nothing applied).
	EnqueueTimeout time.Duration
	// ApplyTimeout bounds the wait from proposal to apply; past it the
	// unit's outcome is ErrUnknownOutcome (it may still apply later).
	ApplyTimeout time.Duration

	// StuckTransferAfter overrides StuckTransferAfter (transfer.go) when
	// positive (tests).
	StuckTransferAfter time.Duration

	// Now is the leader clock stamped into each entry (unix ms). Test hook
	// for clock skew; nil means time.Now.
	Now func() time.Time
	// InjectBug is for the jepsen/ harness's self-test ONLY (raftstream
	// --debug-inject-bug): one of the DebugBug* names makes the shard
	// misbehave in a known way the checkers must flag. Production leaves it
	// "" (correct behaviour). See debug.go.
	InjectBug string
	// Notify, if set, is called after every applied batch of log entries
	// with the keys that may unblock blocked readers (engine.TakeSignaled),
	// on every replica. It runs on Raft's FSM goroutine WITHOUT the FSM lock
	// held (so it may call StaleRead), and must not block: apply waits for it.
	Notify func(shard int, keys []string)
	// KeysOf returns the positions of a command's keys in argv (resp's
	// command table, wired by cmd): what Apply checks against the slots
	// this shard is moving (migrate.go). It must be deterministic and the
	// same on every replica. Nil: the shard refuses to take part in a slot
	// move as its source.
	KeysOf func(argv [][]byte) []int

	// HeartbeatTimeout, ElectionTimeout, LeaderLeaseTimeout and CommitTimeout
	// are hashicorp/raft's; defaults suit a LAN/loopback. CommitTimeout is
	// also how often an idle leader sends each follower an AppendEntries
	// carrying its commit index (every 1–2 × CommitTimeout, on top of the
	// heartbeats), so it is what a quiet cluster spends most on: 20 ms kept
	// an idle 3 × 16 cluster at half a core of CPU, 50 ms (raft's default)
	// at a third (TestIdleShardSendsFewAppends). It bounds how long a
	// follower takes to apply the last entries of a burst.
	HeartbeatTimeout   time.Duration
	ElectionTimeout    time.Duration
	LeaderLeaseTimeout time.Duration
	CommitTimeout      time.Duration
	// MaxAppendEntries is raft's per-RPC entry count (each of ours is a batch).
	MaxAppendEntries int
	// TrailingLogs is how many log entries are kept after a snapshot so slow
	// followers can catch up without a snapshot install. Entries are large
	// batches, so keep it small.
	TrailingLogs uint64
	// SnapshotThreshold and SnapshotInterval drive raft's own snapshot timer.
	// By default the interval is very long: the node schedules snapshots
	// across its shards with TakeSnapshot rather than one timer per group.
	SnapshotThreshold uint64
	SnapshotInterval  time.Duration
	// LogCacheEntries and LogCacheBytes bound the recent log entries a
	// shard keeps in memory (fsm/logcache.go) for the apply on followers
	// and for replicating to followers that are close behind; older ones
	// are read from the log store. Entries are batches of up to
	// MaxBatchBytes, so a count alone does not bound memory (256 entries
	// of 1 MiB would be 256 MiB per shard): the cache drops its oldest
	// entries past either bound, keeping at least the newest. A count of
	// 64 without a byte bound cost a 3-node, 16-shard cluster half its
	// XADD throughput (followers fell further behind than 64 small
	// entries and read from the store); under that load entries are small,
	// so the byte bound keeps all 256.
	LogCacheEntries int
	LogCacheBytes   int
	// SnapshotRetain is how many snapshots the file store keeps.
	SnapshotRetain int
	// NoSync skips fsync in the log store. Benchmarks only: the same file
	// holds the current term and vote.
	NoSync bool
	// LogStore selects the Raft log store: LogStoreNode, LogStoreBolt or
	// LogStoreWAL. "" (the default) keeps the kind a shard directory already
	// has and gives a new one DefaultLogStore (LogStoreBolt when NodeLog is
	// nil). A directory keeps the kind it was created with; naming another
	// fails.
	LogStore string
	// LogStoreFaultFile is for the fsync-error test ONLY (raftstream's
	// RAFTSTREAM_DEBUG_LOG_STORE_FAULT_FILE): while a file exists at this
	// path, every Raft log write of the shard fails with an fsync error
	// (EIO). The write reaches the store first and only its result is
	// replaced, so the entry may or may not be on disk: what a failed fsync
	// leaves. Production leaves it "".
	LogStoreFaultFile string
	// NodeLog is the node's shared log (fsm/nodelog), required by
	// LogStoreNode. The caller owns it: close it after the shards.
	NodeLog *nodelog.Log
}

// DefaultConfig returns defaults tuned for batched entries on a LAN.
func DefaultConfig() Config {
	return Config{
		Engine:             engine.DefaultConfig(),
		MaxBatchCommands:   1024,
		MaxBatchBytes:      1 << 20,
		MaxInFlight:        1,
		MaxLinger:          50 * time.Millisecond,
		MaxGather:          4 * time.Millisecond,
		QueueDepth:         8192,
		EnqueueTimeout:     2 * time.Second,
		ApplyTimeout:       10 * time.Second,
		HeartbeatTimeout:   500 * time.Millisecond,
		ElectionTimeout:    500 * time.Millisecond,
		LeaderLeaseTimeout: 250 * time.Millisecond,
		CommitTimeout:      50 * time.Millisecond,
		MaxAppendEntries:   64,
		TrailingLogs:       1024,
		SnapshotThreshold:  4096,
		SnapshotInterval:   24 * time.Hour,
		SnapshotRetain:     2,
		LogCacheEntries:    256,
		LogCacheBytes:      4 << 20,
	}
}

// Validate reports the first invalid field by name and value.
func (c *Config) Validate() error {
	switch {
	case c.ShardID < 0:
		return fmt.Errorf("fsm: ShardID %d < 0", c.ShardID)
	case c.Dir == "":
		return fmt.Errorf("fsm: Dir is empty")
	case c.LocalID == "":
		return fmt.Errorf("fsm: LocalID is empty")
	case c.Transport == nil:
		return fmt.Errorf("fsm: Transport is nil")
	case c.MaxBatchCommands < 1:
		return fmt.Errorf("fsm: MaxBatchCommands %d < 1", c.MaxBatchCommands)
	case c.MaxBatchBytes < 1:
		return fmt.Errorf("fsm: MaxBatchBytes %d < 1", c.MaxBatchBytes)
	case c.MaxInFlight < 1:
		return fmt.Errorf("fsm: MaxInFlight %d < 1", c.MaxInFlight)
	case c.MaxGather < 0:
		return fmt.Errorf("fsm: MaxGather %v < 0", c.MaxGather)
	case c.MaxLinger < 0:
		return fmt.Errorf("fsm: MaxLinger %v < 0", c.MaxLinger)
	case c.QueueDepth < 1:
		return fmt.Errorf("fsm: QueueDepth %d < 1", c.QueueDepth)
	case c.EnqueueTimeout <= 0:
		return fmt.Errorf("fsm: EnqueueTimeout %v <= 0", c.EnqueueTimeout)
	case c.ApplyTimeout <= 0:
		return fmt.Errorf("fsm: ApplyTimeout %v <= 0", c.ApplyTimeout)
	case c.LogCacheEntries < 1:
		return fmt.Errorf("fsm: LogCacheEntries %d < 1", c.LogCacheEntries)
	case c.LogCacheBytes < 1:
		return fmt.Errorf("fsm: LogCacheBytes %d < 1", c.LogCacheBytes)
	case c.SnapshotRetain < 1:
		return fmt.Errorf("fsm: SnapshotRetain %d < 1", c.SnapshotRetain)
	case c.Engine.NodeMaxBytes < 0:
		return fmt.Errorf("fsm: Engine.NodeMaxBytes %d < 0", c.Engine.NodeMaxBytes)
	case c.Engine.NodeMaxEntries < 0:
		return fmt.Errorf("fsm: Engine.NodeMaxEntries %d < 0", c.Engine.NodeMaxEntries)
	}
	if err := ValidDebugBug(c.InjectBug); err != nil {
		return fmt.Errorf("fsm: InjectBug: %w", err)
	}
	if c.LogStore != "" {
		if err := checkLogStore(c.LogStore); err != nil {
			return fmt.Errorf("fsm: LogStore: %w", err)
		}
	}
	return raft.ValidateConfig(c.raftConfig())
}

// raftConfig translates c into hashicorp/raft's configuration.
func (c *Config) raftConfig() *raft.Config {
	rc := raft.DefaultConfig()
	rc.LocalID = c.LocalID
	rc.HeartbeatTimeout = c.HeartbeatTimeout
	rc.ElectionTimeout = c.ElectionTimeout
	rc.LeaderLeaseTimeout = c.LeaderLeaseTimeout
	rc.CommitTimeout = c.CommitTimeout
	rc.MaxAppendEntries = c.MaxAppendEntries
	rc.TrailingLogs = c.TrailingLogs
	rc.SnapshotThreshold = c.SnapshotThreshold
	rc.SnapshotInterval = c.SnapshotInterval
	// NB: BatchApplyCh stays off. With it, a future still buffered in raft's
	// apply channel when raft shuts down is never answered. The leader loop
	// still coalesces entries that are ready together into one disk write.
	rc.BatchApplyCh = false
	rc.LogLevel = "INFO"
	if c.RaftLogger != nil {
		rc.Logger = c.RaftLogger.Named("raft")
	}
	return rc
}
