package cluster

import (
	"context"
	"time"

	"github.com/raftstream/raftstream/engine"
	"github.com/raftstream/raftstream/fsm"
)

// Ageing data out: the node's active expiry cycle (Redis's
// activeExpireCycle) and its retention cycle, in one goroutine.
//
// Expiry: every ExpireInterval, for each shard this node leads,
// it asks the local engine for the keys whose expiry has passed
// (engine.ExpireCycle, under the read lock) and proposes their deletion
// through the shard's log, so every replica removes the same keys at the
// same log position. The work is bounded: at most expireBatch keys per
// proposal and expireRounds proposals per shard per tick; each proposal is
// waited for before the next is prepared, so nothing is proposed twice.
// A proposal names the expiry it saw, so one that loses a race with a write
// re-creating the key deletes nothing.
//
// Until a key's removal is applied it is already absent to every command
// (the engine compares its expiry with each command's time), so the cycle
// only reclaims memory and makes DBSIZE-like counts cheap; its delay is not
// visible to clients.
//
// Retention: every RetentionInterval, for each shard this node leads, it
// asks the engine which streams governed by a retention policy have
// something to trim at the leader's time (engine.RetentionCycle: at most
// retainVisit streams looked at, from where the last tick stopped) and
// proposes RAFTSTREAM.RETAIN for up to retainBatch of them. The command
// evaluates each policy at the entry's time, so every replica trims the
// same entries; a stream with nothing left to trim is left alone.

const (
	expireBatch  = 200 // keys per proposal
	expireRounds = 5   // proposals per shard per tick
	retainVisit  = 2000
	retainBatch  = 100 // streams per proposal
	retainRounds = 4   // proposals per shard per tick
	// ageOutWait bounds the wait for one proposal.
	ageOutWait = 5 * time.Second
)

// ageOutLoop runs the expiry and retention cycles until the node closes.
func (n *Node) ageOutLoop() {
	var expire, retain <-chan time.Time
	if n.cfg.ExpireInterval > 0 {
		t := time.NewTicker(n.cfg.ExpireInterval)
		defer t.Stop()
		expire = t.C
	}
	if n.cfg.RetentionInterval > 0 {
		t := time.NewTicker(n.cfg.RetentionInterval)
		defer t.Stop()
		retain = t.C
	}
	var cursors []int // per shard; shards are added while the node runs
	for {
		var step func(i int, s *fsm.Shard)
		select {
		case <-n.shutdownCh:
			return
		case <-expire:
			step = func(_ int, s *fsm.Shard) { n.expireShard(s) }
		case <-retain:
			step = func(i int, s *fsm.Shard) { cursors[i] = n.retainShard(s, cursors[i]) }
		}
		nShards := n.NumShards()
		for len(cursors) < nShards {
			cursors = append(cursors, 0)
		}
		for i := range nShards {
			ls := n.shard(i)
			if ls == nil || !ls.s.IsLeader() {
				continue
			}
			step(i, ls.s)
		}
	}
}

// clock is the leader clock the cycles judge expiries by (the one stamped
// into entries).
func (n *Node) clock() int64 {
	if n.cfg.Now != nil {
		return n.cfg.Now().UnixMilli()
	}
	return time.Now().UnixMilli()
}

// expireShard runs up to expireRounds expiry proposals on a shard it leads.
func (n *Node) expireShard(s *fsm.Shard) {
	for range expireRounds {
		var argv [][]byte
		s.StaleRead(func(e *engine.Engine) { argv = e.ExpireCycle(e.ReadTime(n.clock()), expireBatch) })
		if argv == nil {
			return
		}
		if !n.proposeAgeOut(s, argv) || len(argv) < 1+2*expireBatch {
			return
		}
	}
}

// retainShard runs up to retainRounds retention proposals on a shard it
// leads, starting at cursor; it returns the cursor for the next tick.
func (n *Node) retainShard(s *fsm.Shard, cursor int) int {
	for range retainRounds {
		var argv [][]byte
		s.StaleRead(func(e *engine.Engine) {
			argv, cursor = e.RetentionCycle(e.ReadTime(n.clock()), cursor, retainVisit, retainBatch)
		})
		if argv == nil || !n.proposeAgeOut(s, argv) || len(argv) < 1+retainBatch {
			break
		}
	}
	return cursor
}

// proposeAgeOut proposes one cycle command and waits for it; false when
// it did not apply (leadership lost, shutdown, timeout): the next tick
// looks again.
func (n *Node) proposeAgeOut(s *fsm.Shard, argv [][]byte) bool {
	f := s.Submit(fsm.Unit{argv})
	t := time.NewTimer(ageOutWait)
	defer t.Stop()
	select {
	case <-f.Done():
	case <-n.shutdownCh:
		return false
	case <-t.C:
		return false
	}
	rs, err := f.Wait(context.Background())
	if err != nil {
		n.log.Debug("age-out proposal failed", "cmd", string(argv[0]), "err", err)
		return false
	}
	if e, ok := rs[0].(*engine.Error); ok {
		n.log.Warn("age-out proposal rejected", "cmd", string(argv[0]), "err", e.Msg)
		return false
	}
	return true
}
