package resp

import (
	"strings"

	"github.com/raftstream/raftstream/engine"
)

// multiState is a connection's open transaction (between MULTI and EXEC).
type multiState struct {
	queue [][][]byte
	cmds  []*Command
	dirty bool // a command failed to queue: EXEC aborts
	shard int  // shard of the queued keys, -1 while none
	slot  int
}

func (s *Server) cmdMulti(c *client) reply {
	if c.multi != nil {
		return errMultiNested
	}
	c.multi = &multiState{shard: -1, slot: -1}
	return engine.OK
}

func (s *Server) cmdDiscard(c *client) reply {
	if c.multi == nil {
		return errDiscardNoMulti
	}
	c.multi = nil
	return engine.OK
}

// multiQueue handles a command sent while a transaction is open. It returns
// handled=false for commands that run immediately (EXEC, DISCARD, MULTI,
// QUIT, RESET and WATCH).
func (s *Server) multiQueue(c *client, argv [][]byte) (reply, bool) {
	switch strings.ToLower(string(argv[0])) {
	case "exec", "discard", "multi", "quit", "reset":
		return nil, false
	case "watch":
		// Refused without aborting the transaction, as in Redis.
		return errorf("ERR WATCH inside MULTI is not allowed"), true
	}
	m := c.multi
	cmd, er := lookup(argv)
	if er != nil {
		m.dirty = true
		return er, true
	}
	if !c.authed && cmd.Flags&FlagNoAuth == 0 {
		m.dirty = true
		return errNoAuth, true
	}
	if er := s.checkPerm(c, cmd, argv); er != nil {
		m.dirty = true
		return er, true
	}
	if er := s.checkOOM(cmd); er != nil {
		m.dirty = true
		return er, true
	}
	if cmd.Kind == KindWrite || cmd.Kind == KindRead {
		shard, slot, er := s.route(cmd, argv)
		if er != nil {
			m.dirty = true
			return er, true
		}
		if shard >= 0 {
			if m.shard >= 0 && shard != m.shard {
				m.dirty = true
				return errCrossSlot, true
			}
			m.shard, m.slot = shard, slot
		}
	}
	m.queue = append(m.queue, argv)
	m.cmds = append(m.cmds, cmd)
	return engine.SimpleString("QUEUED"), true
}

// cmdExec runs the transaction: its engine commands are proposed as ONE
// unit (one log entry, applied atomically) when any of them writes, or read
// under one Read otherwise; server-local commands are answered in place.
func (s *Server) cmdExec(c *client) reply {
	m := c.multi
	if m == nil {
		return errExecNoMulti
	}
	c.multi = nil
	c.lastExec = nil
	if m.dirty {
		return errExecAbort
	}
	c.lastExec = m.queue
	shard := m.shard
	if shard < 0 {
		shard = 0
	}
	var unit [][][]byte
	writes := false
	for i, cmd := range m.cmds {
		if cmd.Kind == KindWrite || cmd.Kind == KindRead {
			unit = append(unit, stripBlock(cmd, m.queue[i]))
			writes = writes || cmd.Kind == KindWrite
		}
	}
	var engineReplies []reply
	if len(unit) > 0 {
		if writes {
			rs, err := s.waitUnit(s.be.Submit(shard, unit))
			if err != nil {
				return s.mapError(err, m.slot)
			}
			engineReplies = rs
		} else {
			rs, er := s.readUnit(c, shard, m.slot, unit)
			if er != nil {
				return er
			}
			engineReplies = rs
		}
		if len(engineReplies) != len(unit) {
			return errorf("ERR internal error: %d replies for %d commands", len(engineReplies), len(unit))
		}
	}
	out := make(engine.Array, 0, len(m.queue))
	k := 0
	for i, cmd := range m.cmds {
		if cmd.Kind == KindWrite || cmd.Kind == KindRead {
			out = append(out, engineReplies[k])
			k++
			continue
		}
		r := cmd.local(s, c, m.queue[i])
		if r == nil {
			r = engine.OK
		}
		out = append(out, r)
	}
	return out
}

// forwardUnit is what to send to another node when argv was answered MOVED:
// the command itself, or for EXEC the whole transaction.
func (s *Server) forwardUnit(c *client, argv [][]byte) [][][]byte {
	if len(argv) == 1 && strings.EqualFold(string(argv[0]), "exec") && c.lastExec != nil {
		out := make([][][]byte, 0, len(c.lastExec)+2)
		out = append(out, [][]byte{[]byte("MULTI")})
		out = append(out, c.lastExec...)
		return append(out, argv)
	}
	return [][][]byte{argv}
}

// isBlocking reports whether argv is a blocking read (BLOCK option given).
func isBlocking(argv [][]byte) bool {
	cmd, er := lookup(argv)
	if er != nil || cmd.Flags&FlagBlocking == 0 {
		return false
	}
	_, ok := blockTimeout(argv)
	return ok
}

func cmdUnwatch(s *Server, c *client, argv [][]byte) reply { return engine.OK }
