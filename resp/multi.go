package resp

import (
	"bytes"
	"strings"

	"github.com/raftstream/raftstream/engine"
	"github.com/raftstream/raftstream/fsm"
	"github.com/raftstream/raftstream/resp/command"
)

// multiState is a connection's open transaction (between MULTI and EXEC).
type multiState struct {
	queue [][][]byte
	cmds  []*command.Command
	dirty bool // a command failed to queue: EXEC aborts
	shard int  // shard of the queued keys, -1 while none
	slot  int
	// crossSlot is set when queued commands' keys live in different slots
	// of a cluster (or shards): EXEC answers CROSSSLOT, as Redis Cluster
	// checks the transaction as a whole when it runs.
	crossSlot bool
	// asking is set when the keyed commands were sent with ASKING and
	// routed to the shard importing their slot (asking.go).
	asking bool
}

func cmdMulti(s *Server, c *client, _ [][]byte) reply {
	if c.multi != nil {
		return errMultiNested
	}
	c.multi = &multiState{shard: -1, slot: -1}
	return engine.OK
}

func cmdDiscard(s *Server, c *client, _ [][]byte) reply {
	if c.multi == nil {
		return errDiscardNoMulti
	}
	c.multi = nil
	return engine.OK
}

// endsMulti reports whether the request runs at once even inside a
// transaction (EXEC, DISCARD, MULTI, QUIT, RESET), whatever its arguments.
func (r *request) endsMulti() bool {
	var buf [engine.NameBuf]byte
	switch string(engine.LowerName(&buf, r.argv[0])) {
	case "exec", "discard", "multi", "quit", "reset":
		return true
	}
	return false
}

// multiQueue queues a command sent while a transaction is open, after the
// same admission checks as any command; a command that fails them marks the
// transaction so that EXEC aborts.
func (s *Server) multiQueue(c *client, r *request) reply {
	m := c.multi
	if r.err != nil && bytes.EqualFold(r.argv[0], []byte("watch")) {
		// Refused without aborting the transaction, as in Redis.
		return errorf("ERR WATCH inside MULTI is not allowed")
	}
	if er := s.admit(c, r); er != nil {
		m.dirty = true
		return er
	}
	if r.cmd.Flags&command.FlagNoMulti != 0 {
		m.dirty = true
		return errNoMulti
	}
	if r.shard >= 0 {
		switch {
		case m.shard < 0:
			m.shard, m.slot, m.asking = r.shard, r.slot, r.asking
		case r.shard != m.shard || (r.slot != m.slot && s.be.NumShards() > 1):
			m.crossSlot = true
		}
	}
	m.queue = append(m.queue, r.argv)
	m.cmds = append(m.cmds, r.cmd)
	return engine.SimpleString("QUEUED")
}

// cmdExec runs the transaction: its engine commands are proposed as ONE
// unit (one log entry, applied atomically) when any of them writes, or read
// under one Read otherwise; server-local commands are answered in place.
func cmdExec(s *Server, c *client, argv [][]byte) reply {
	m := c.multi
	if s.hooks.Load()&hookMonitor != 0 {
		// Monitors see the transaction's commands, then EXEC, as Redis
		// shows them (after each runs).
		if m != nil && !m.dirty {
			for i, qc := range m.cmds {
				if monitored(qc) {
					s.feedMonitors(c, m.queue[i])
				}
			}
		}
		s.feedMonitors(c, argv)
	}
	if m == nil {
		return errExecNoMulti
	}
	c.multi = nil
	c.lastExec = nil
	if m.dirty {
		return errExecAbort
	}
	if m.crossSlot {
		return errCrossSlot
	}
	c.lastExec = m.queue
	shard := m.shard
	if shard < 0 {
		shard = 0
	}
	var unit [][][]byte
	writes := false
	for i, cmd := range m.cmds {
		if cmd.Kind == command.KindWrite || cmd.Kind == command.KindRead {
			unit = append(unit, stripBlock(cmd, m.queue[i]))
			writes = writes || cmd.Kind == command.KindWrite
		}
	}
	var engineReplies []reply
	var wrote futureLike // the unit, once applied, when it writes
	if len(unit) > 0 {
		if writes {
			if m.asking {
				unit = fsm.AskingUnit(unit)
			}
			f := s.be.Submit(shard, unit)
			rs, err := s.waitUnit(f)
			if err != nil {
				return s.mapError(err, m.slot)
			}
			if m.asking && len(rs) > 0 {
				rs, unit = rs[1:], unit[1:]
			}
			if r := s.firstRedirect(rs, m.slot); r != nil {
				return r // the FSM refused the transaction whole
			}
			engineReplies, wrote = rs, f
		} else {
			rs, er := s.readUnit(c, shard, m.slot, unit, m.asking)
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
	// WAIT inside the transaction answers at once, about the position
	// before it (wait.go); BGSAVE answers as scheduled (save.go).
	c.wait.noBlock, c.execing = true, true
	defer func() {
		c.wait.noBlock, c.execing = false, false
		if wrote != nil {
			c.noteWrite(shard, wrote)
		}
	}()
	for i, cmd := range m.cmds {
		if cmd.Kind == command.KindWrite || cmd.Kind == command.KindRead {
			out = append(out, engineReplies[k])
			k++
			continue
		}
		r := handlers[cmd.ID](s, c, m.queue[i])
		if r == nil {
			r = engine.OK
		}
		out = append(out, r)
	}
	s.execAnswered(c, m.cmds, m.queue, out)
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

func cmdUnwatch(s *Server, c *client, argv [][]byte) reply { return engine.OK }
