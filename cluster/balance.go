package cluster

import (
	"time"

	"github.com/hashicorp/raft"
)

// Leader balancing. Every shard has a preferred leader, its first replica
// (placement rotates it round-robin, so 3 nodes × 16 shards prefer 6/5/5).
// Each node, every BalanceInterval, hands at most one shard it leads but
// does not prefer to the preferred node, provided that node is a voter of
// the shard's current configuration (a re-placed replica is a non-voter
// while it catches up) and has answered
// health polls for at least two intervals (hysteresis: a flapping node is
// not handed leadership) and the shard was not handed over in the last
// three intervals. A node that comes back therefore regains its shards one
// by one, and nothing moves while it is down.
func (n *Node) balanceLoop() {
	t := time.NewTicker(n.cfg.BalanceInterval)
	defer t.Stop()
	lastMove := make(map[int]time.Time)
	for {
		select {
		case <-n.shutdownCh:
			return
		case <-t.C:
		}
		n.balanceOnce(lastMove)
	}
}

func (n *Node) balanceOnce(lastMove map[int]time.Time) {
	st := n.st.Load()
	if st.members == nil {
		return
	}
	iv := n.cfg.BalanceInterval
	for i, ls := range st.shards {
		if ls == nil || !ls.s.IsLeader() || i >= len(st.members.Shards) || len(st.members.Shards[i]) == 0 {
			continue // not led here, or retired (shards.go)
		}
		pref := st.members.Shards[i][0]
		if pref == n.id || n.health.upFor(pref) < 2*iv || time.Since(lastMove[i]) < 3*iv {
			continue
		}
		m, ok := st.members.Node(pref)
		if !ok {
			continue
		}
		// The preferred replica of a re-placed shard may not be a voter
		// yet (added as non-voter, catching up). Leadership handed to a
		// non-voter is lost: its election with the transfer's higher term
		// deposes this leader and it cannot win, so the shard is leaderless
		// until the next election, and the transfer also blocks the
		// reconfiguration steps meanwhile.
		if !isVoter(ls.s.Raft(), pref) {
			continue
		}
		lastMove[i] = time.Now()
		f := ls.s.TransferLeadership(raft.ServerID(pref), raft.ServerAddress(m.RESPAddr()))
		n.goFunc(func() {
			if err := f.Error(); err != nil {
				n.log.Info("balance: leadership transfer failed", "shard", i, "to", pref, "err", err)
			} else {
				n.log.Info("balance: leadership transferred", "shard", i, "to", pref)
			}
		})
		return // one transfer per tick
	}
}
