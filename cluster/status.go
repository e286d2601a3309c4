package cluster

import (
	"context"
	"errors"
	"fmt"

	"github.com/hashicorp/raft"

	"github.com/raftstream/raftstream/fsm"
)

// Operator-facing views and actions on local shard replicas (part of
// resp.Backend: RAFTSTREAM STATUS, TRANSFER-LEADER, SNAPSHOT and BACKUP, INFO).

// ErrNotHosted is returned for a shard with no replica on this node.
var ErrNotHosted = errors.New("shard not hosted on this node")

// ShardStats reports the counters of the local replica of shard; false if
// it is not hosted here. It never waits on apply.
func (n *Node) ShardStats(shard int) (fsm.Stats, bool) {
	ls := n.shard(shard)
	if ls == nil {
		return fsm.Stats{}, false
	}
	return ls.s.Stats(), true
}

// TransferLeader hands leadership of shard, which this node must lead, to
// the voter to (a node ID), or to the most up-to-date other voter when to
// is "". It waits for the transfer (bounded by ctx).
func (n *Node) TransferLeader(ctx context.Context, shard int, to string) error {
	ls := n.shard(shard)
	if ls == nil {
		return fmt.Errorf("shard %d: %w", shard, ErrNotHosted)
	}
	if !ls.s.IsLeader() {
		id, _ := ls.s.Leader()
		return &fsm.NotLeaderError{LeaderID: id}
	}
	var f raft.Future
	if to == "" {
		f = ls.s.TransferLeadership("", "")
	} else {
		cf := ls.s.Raft().GetConfiguration()
		if err := cf.Error(); err != nil {
			return err
		}
		var addr raft.ServerAddress
		for _, s := range cf.Configuration().Servers {
			if string(s.ID) == to && s.Suffrage == raft.Voter {
				addr = s.Address
			}
		}
		if addr == "" {
			return fmt.Errorf("shard %d: node %s is not a voter of this shard", shard, to)
		}
		f = ls.s.TransferLeadership(raft.ServerID(to), addr)
	}
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// SnapshotShard snapshots the local replica of shard now.
// raft.ErrNothingNewToSnapshot is returned as is.
func (n *Node) SnapshotShard(shard int) error {
	ls := n.shard(shard)
	if ls == nil {
		return fmt.Errorf("shard %d: %w", shard, ErrNotHosted)
	}
	return ls.s.TakeSnapshot()
}

// Backup returns the state of shard at a linearizable point, from the
// local replica, which must lead it (fsm.Shard.Backup); a shard this node
// does not lead fails as Read does, with *fsm.NotLeaderError naming the
// leader when known.
func (n *Node) Backup(ctx context.Context, shard int) (*fsm.Backup, error) {
	ls := n.shard(shard)
	if ls == nil || n.movingAway(shard, ls) {
		return nil, n.remoteLeader(shard)
	}
	return ls.s.Backup(ctx)
}
