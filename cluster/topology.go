package cluster

import (
	"time"

	"github.com/raftstream/raftstream/slots"
)

// The views a node gives of the cluster: what CLUSTER SLOTS/SHARDS/NODES,
// MOVED and INFO are built from. They are plain values, copied out under the
// node's locks, so a caller may keep them.

// Topology is a point-in-time view of the cluster.
type Topology struct {
	MyID   string // 40-hex node ID of this node
	Epoch  uint64
	Nodes  []NodeInfo
	Shards []ShardInfo // index = shard number
	// SlotEpoch is the slot map's epoch; Slots the map itself, as runs in
	// slot order (every slot exactly once); Moves the slot moves in flight.
	SlotEpoch uint64
	Slots     []slots.Run
	Moves     []SlotMove
}

// NodeInfo is one cluster member.
type NodeInfo struct {
	ID   string // 40 hex chars
	Host string // announced RESP host
	Port int    // announced RESP port
	Bus  int    // cluster bus port
	Up   bool
	// UpSince is when this node last saw the member start answering its
	// polls (CLUSTER LINKS create-time); zero for this node itself and for
	// a member seen down.
	UpSince time.Time
}

// ShardInfo is one shard: the slot ranges it owns (none for a new or
// emptied shard) and its replica set (none for a retired shard).
type ShardInfo struct {
	Slots    []slots.Range
	Leader   string // node ID, "" when unknown
	Replicas []string
}

// ShardStatus is the Raft state of a local shard replica.
type ShardStatus struct {
	Role         string // leader, follower, candidate, shutdown
	Term         uint64
	CommitIndex  uint64
	AppliedIndex uint64
	LastIndex    uint64
	Leader       string
	// Voters and Nonvoters are the node IDs in the replica's latest Raft
	// configuration (the committed one on a leader once its change
	// committed).
	Voters, Nonvoters []string
	// Followers are, on the leader, the other members of the shard's Raft
	// group with the log index each has acknowledged storing in the
	// current term; nil on other replicas.
	Followers []FollowerStatus
}

// FollowerStatus is what a shard's leader knows of another member.
type FollowerStatus struct {
	ID     string
	Voter  bool   // a voter, else a non-voter catching up
	Stored uint64 // the highest log index it acknowledged storing, when Known
	Known  bool
}
