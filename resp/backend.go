package resp

import (
	"context"

	"github.com/raftstream/raftstream/cluster"
	"github.com/raftstream/raftstream/engine"
	"github.com/raftstream/raftstream/fsm"
	"github.com/raftstream/raftstream/fsm/nodelog"
	"github.com/raftstream/raftstream/slots"
)

// Backend is what the RESP server needs from the node it runs on
// (implemented by cluster.Node). Methods are called from many connection
// goroutines at once and must be safe for that; none may block for long
// except Read, Backup, TransferLeader and RemoveNode (bounded by ctx) and
// SnapshotShard (one snapshot).
//
// Errors from Submit's future and from Read are mapped to client errors by
// Server.mapError: *fsm.NotLeaderError (MOVED when the leader's node is in
// Topology, else TRYAGAIN), fsm.ErrUnknownOutcome (UNKNOWN), fsm.ErrBusy
// (TRYAGAIN), fsm.ErrShutdown, and ErrNoQuorum (CLUSTERDOWN), which a
// backend may wrap when a shard has lost its quorum. Changes to this
// interface are additive only.
type Backend interface {
	// NumShards is the cluster's shard count (fixed at creation).
	NumShards() int
	// ShardOfSlot maps a hash slot (0..16383) to its shard.
	ShardOfSlot(slot int) int
	// Submit proposes a unit to the shard's Raft group. If this node does
	// not lead the shard the future fails with *fsm.NotLeaderError.
	Submit(shard int, unit fsm.Unit) *fsm.Future
	// Read runs fn against the shard's engine. With stale=false the read is
	// linearizable (leader only, after a read fence); with stale=true any
	// local replica serves it (READONLY). fn must not retain the engine and
	// must not block.
	Read(ctx context.Context, shard int, stale bool, fn func(e *engine.Engine)) error
	// SetNotify installs the callback invoked after every apply with the keys
	// that may unblock readers. The callback must not block. resp.New calls
	// it once.
	SetNotify(func(shard int, keys []string))
	// Topology describes the cluster for CLUSTER SLOTS/SHARDS/NODES and MOVED.
	Topology() cluster.Topology
	// ShardStatus describes one locally hosted shard replica for INFO.
	ShardStatus(shard int) (cluster.ShardStatus, bool)
	// ShardStats reports the local replica's counters (RAFTSTREAM STATUS,
	// INFO persistence); false if the shard is not hosted here.
	ShardStats(shard int) (fsm.Stats, bool)
	// NodeLogStats reports the writes of the node's shared Raft log
	// (fsm/nodelog) for INFO persistence.
	NodeLogStats() nodelog.Stats
	// CoLocated is how many of the cluster's nodes run on this node's
	// host, this one included (INFO server).
	CoLocated() int
	// TransferLeader moves leadership of a shard this node leads to node
	// to ("" = any up-to-date voter), waiting for it (bounded by ctx).
	// *fsm.NotLeaderError if this node does not lead it.
	TransferLeader(ctx context.Context, shard int, to string) error
	// SnapshotShard snapshots the local replica of shard now;
	// raft.ErrNothingNewToSnapshot when nothing was applied since the last.
	SnapshotShard(shard int) error
	// Backup returns the state of shard at a linearizable point (leader
	// only, after a read fence, as Read; *fsm.NotLeaderError elsewhere),
	// bounded by ctx. The view's encoding may run while applies continue
	// (RAFTSTREAM BACKUP, backup.go).
	Backup(ctx context.Context, shard int) (*fsm.Backup, error)
	// RemoveNode drains the member id (moves its replicas away) and drops
	// it from the cluster, waiting for it (bounded by ctx).
	RemoveNode(ctx context.Context, id string) error
	// WaitReplicas reports how many other replicas of shard have stored
	// (appended and fsynced) the log up to index, waiting, bounded by ctx,
	// until at least want have; at once when they already have. Index 0
	// counts the connected replicas. leading is false, and n 0, when no
	// local replica leads the shard: only its leader sees the followers'
	// acknowledgements (WAIT, wait.go).
	WaitReplicas(ctx context.Context, shard int, index uint64, want int) (n int, leading bool)
	// BusStats reports the node's cluster-bus traffic and its view of the
	// controller group (INFO bus).
	BusStats() cluster.BusStats

	// Slot moves (asking.go, slots_cmds.go).
	//
	// ReadChecked is Read for commands: fn also gets the shard's checker,
	// which says, at the state fn sees, whether a command's keys are
	// served by that shard or where they must go (fsm.AsRedirect).
	ReadChecked(ctx context.Context, shard int, stale bool, fn func(e *engine.Engine, check fsm.Checker)) error
	// SlotMoving reports whether slot is in a move in flight, and its
	// source and target shards.
	SlotMoving(slot int) (from, to int, ok bool)
	// ImportingShard is the shard a command sent with ASKING for slot goes
	// to: the one importing the slot; false when no shard is.
	ImportingShard(slot int) (int, bool)
	// MoveSlots asks the controller to move the slots of r to shard to and
	// returns the IDs of the moves recorded (none when already there).
	MoveSlots(ctx context.Context, r slots.Range, to int) ([]uint64, error)
	// SlotsStatus lists the moves in flight with their drivers' progress.
	SlotsStatus(ctx context.Context) []cluster.MoveStatus
	// AddShard adds a shard (a Raft group) on nodes, or where the
	// controller places it, and returns its number.
	AddShard(ctx context.Context, nodes []string) (int, error)
	// RemoveShard retires an empty shard that owns no slot.
	RemoveShard(ctx context.Context, shard int) error
	// ShardPolicy is the cluster's automatic shard policy (nil: none).
	ShardPolicy() *cluster.ShardPolicy
	// SetShardPolicy turns the shard policy on or off and, when perNode >
	// 0, sets its shards per node.
	SetShardPolicy(ctx context.Context, auto bool, perNode float64) error
}
