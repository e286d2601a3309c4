package resp

import (
	"context"
	"fmt"

	"github.com/raftstream/raftstream/engine"
	"github.com/raftstream/raftstream/fsm"
)

// Slot moves as clients see them. Whether a command's keys are served by
// the shard it was routed to is decided by that shard's FSM at the
// command's log position (fsm/migrate.go), for writes in Apply and for
// reads under the read's lock (Backend.ReadChecked). The FSM answers in
// shards; this file turns its answer into Redis Cluster's replies:
//
//   - -ASK <slot> <host:port of the target shard's leader>: the key is (or
//     will be created) on the shard the slot is moving to; the client sends
//     ASKING and the command there, once.
//   - -MOVED <slot> <host:port>: the slot belongs to another shard.
//   - -TRYAGAIN: the key is being copied, or a multi-key command has keys
//     on both sides of a move.
//
// A command sent after ASKING is routed to the shard importing its slot
// (Backend.ImportingShard) and proposed as a unit marked ASKING
// (fsm.AskingUnit), which the importing shard serves before it owns the
// slot. Redis clears the flag after one command, except inside MULTI.

var (
	errTryAgainMoving = errorf("TRYAGAIN the key is being moved to another shard, retry later")
	errTryAgainMulti  = errorf("TRYAGAIN Multiple keys request during rehashing of slot")
)

// redirect turns a redirect the FSM answered (fsm.AsRedirect) into the
// client's reply; any other reply is returned as it is. slot is the
// command's slot (the FSM's is used when it names one).
func (s *Server) redirect(r reply, slot int) reply {
	rd, ok := fsm.AsRedirect(r)
	if !ok {
		return r
	}
	if rd.Slot >= 0 {
		slot = rd.Slot
	}
	switch rd.Kind {
	case fsm.RedirectAsk, fsm.RedirectMoved:
		addr, self := s.shardLeaderAddr(rd.Shard)
		if addr == "" || slot < 0 {
			return errTryAgainLeader
		}
		if rd.Kind == fsm.RedirectAsk {
			return errorf("ASK %d %s", slot, addr)
		}
		if self && s.be.ShardOfSlot(slot) != rd.Shard {
			// This node leads the new owner but routes the slot by a map
			// that predates the move: MOVED here would bring the client
			// straight back. Its map catches up within a poll.
			return errTryAgainMoving
		}
		return errorf("MOVED %d %s", slot, addr)
	}
	if rd.Multi {
		return errTryAgainMulti
	}
	return errTryAgainMoving
}

// shardLeaderAddr is the RESP address of shard's leader ("" if unknown),
// and whether that is this node.
func (s *Server) shardLeaderAddr(shard int) (string, bool) {
	top := s.be.Topology()
	if shard < 0 || shard >= len(top.Shards) {
		return "", false
	}
	if n, ok := nodeByID(top, top.Shards[shard].Leader); ok {
		return fmt.Sprintf("%s:%d", n.Host, n.Port), n.ID == top.MyID
	}
	return "", false
}

// askRoute applies the connection's ASKING flag to r, a command just
// classified: a keyed engine command of a slot some shard is importing
// goes to that shard, marked. The flag is then cleared, unless r is ASKING
// itself or the connection is in a transaction (Redis keeps it there).
func (s *Server) askRoute(c *client, r *request) {
	if !c.asking {
		return
	}
	if r.cmd != nil && (r.cmd.Name == "asking" || r.cmd.Name == "multi") {
		return // MULTI keeps the flag for the transaction, as in Redis
	}
	if r.engineCmd() && r.slot >= 0 && !r.crossSlot {
		if sh, ok := s.be.ImportingShard(r.slot); ok {
			r.shard, r.asking = sh, true
		}
	}
	if c.multi == nil || r.endsMulti() {
		c.asking = false
	}
}

// writeAsking proposes argv as a unit marked ASKING and returns its reply.
func (s *Server) writeAsking(c *client, shard, slot int, argv [][]byte) reply {
	f := s.be.Submit(shard, fsm.AskingUnit(fsm.Unit{argv}))
	r := s.waitReply(f, slot, 1, 2)
	c.noteWrite(shard, f)
	return r
}

// readAsk runs a read command against the shard's engine if the shard
// serves its keys (asking: the client sent ASKING), else answers where to
// go.
func (s *Server) readAsk(c *client, shard, slot int, argv [][]byte, asking bool) reply {
	var r reply
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.WriteTimeout)
	defer cancel()
	err := s.be.ReadChecked(ctx, shard, c.readonly, func(e *engine.Engine, check fsm.Checker) {
		if r = check(argv, asking); r == nil {
			// The time is the serving replica's, taken after the read
			// fence (expiry).
			r = e.Exec(e.ReadTime(nowMs()), argv)
		}
	})
	if err != nil {
		return s.mapReadError(err, slot)
	}
	return s.redirect(r, slot)
}

// firstRedirect returns the client's reply for the first redirect among a
// unit's replies (the FSM refuses a unit whole), or nil.
func (s *Server) firstRedirect(rs []reply, slot int) reply {
	var any reply
	for _, r := range rs {
		if rd, ok := fsm.AsRedirect(r); ok {
			if rd.Kind != fsm.RedirectTryAgain || rd.Slot >= 0 {
				return s.redirect(r, slot)
			}
			any = r
		}
	}
	if any != nil {
		return s.redirect(any, slot)
	}
	return nil
}

// slotMovedAway is the redirect for a client blocked on shard for slot once
// this node's slot map gives the slot to another shard: MOVED to its
// leader (TRYAGAIN while none is known). nil while the shard owns it.
func (s *Server) slotMovedAway(shard, slot int) reply {
	if slot < 0 {
		return nil
	}
	if owner := s.be.ShardOfSlot(slot); owner != shard {
		return s.redirect(fsm.Redirect{Kind: fsm.RedirectMoved, Slot: slot, Shard: owner}.Reply(), slot)
	}
	return nil
}

// isolateMoving reports whether a write to slot should be proposed as a
// unit of its own: its slot is moving, so the FSM may refuse it, and a
// refused unit takes every command in it along (TRYAGAIN).
func (s *Server) isolateMoving(slot int) bool {
	if slot < 0 {
		return false
	}
	_, _, moving := s.be.SlotMoving(slot)
	return moving
}
