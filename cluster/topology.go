package cluster

import "github.com/raftstream/raftstream/slots"

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
}
