package cluster

import (
	"strconv"
	"time"
)

// snapshotLoop is the node-level snapshot scheduler: every
// SnapshotInterval it snapshots, one after another, the local shards with
// more than SnapshotThreshold applied entries since their last snapshot,
// most behind first. Shards' own raft timers are set very long (fsm
// defaults), so snapshots never run for many groups at once.
func (n *Node) snapshotLoop() {
	t := time.NewTicker(n.cfg.SnapshotInterval)
	defer t.Stop()
	for {
		select {
		case <-n.shutdownCh:
			return
		case <-t.C:
		}
		for range n.NumShards() {
			if s, err := n.snapshotOnce(); s < 0 || err != nil {
				break
			}
			select {
			case <-n.shutdownCh:
				return
			default:
			}
		}
	}
}

// snapshotOnce snapshots the shard chosen by pickSnapshot; it returns that
// shard (-1 if none) and the snapshot's error.
func (n *Node) snapshotOnce() (int, error) {
	best, lag := n.pickSnapshot()
	if best < 0 {
		return -1, nil
	}
	if err := n.shard(best).s.TakeSnapshot(); err != nil {
		n.log.Warn("snapshot failed", "shard", best, "err", err)
		return best, err
	}
	n.log.Info("snapshot taken", "shard", best, "entries", lag)
	return best, nil
}

// heldSegments is how many node log segments behind the current one a
// shard's log may start before the scheduler snapshots it below
// SnapshotThreshold (pickSnapshot): with the default 64 MiB segments, a quiet
// shard keeps at most ~256 MiB of other shards' log from being deleted.
// Small logs are carried forward by the node log instead (relocation), once
// they start before the previous segment.
const heldSegments = 4

// pickSnapshot returns the local shard with the most applied entries since
// its last snapshot and that count, or -1 if no shard reaches
// SnapshotThreshold. Failing that, it returns the shard, of those whose log
// keeps heldSegments or more node log segments from being deleted, that a
// snapshot would compact most (more entries since the last one than
// TrailingLogs). Without it, a shard that wrote a burst of large entries and
// went quiet below the threshold kept its first segment and every later
// one, and the node log grew with the other shards' writes for as long as
// it stayed quiet.
func (n *Node) pickSnapshot() (int, uint64) {
	st := n.st.Load()
	best, bestLag := -1, uint64(0)
	holder, holderLag := -1, uint64(0)
	for i, ls := range st.shards {
		if ls == nil {
			continue
		}
		stats := ls.s.Raft().Stats()
		applied, _ := strconv.ParseUint(stats["applied_index"], 10, 64)
		snap, _ := strconv.ParseUint(stats["last_snapshot_index"], 10, 64)
		if applied <= snap {
			continue
		}
		lag := applied - snap
		if lag > bestLag {
			best, bestLag = i, lag
		}
		if lag > n.cfg.TrailingLogs && lag > holderLag && ls.s.NodeLogSegmentsHeld() >= heldSegments {
			holder, holderLag = i, lag
		}
	}
	if best >= 0 && bestLag >= n.cfg.SnapshotThreshold {
		return best, bestLag
	}
	if holder >= 0 {
		return holder, holderLag
	}
	return -1, 0
}
