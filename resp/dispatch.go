package resp

import (
	"time"

	"github.com/raftstream/raftstream/engine"
	"github.com/raftstream/raftstream/resp/command"
)

// How a command is decided. Every path — the pipelined fast path, the
// general path, MULTI's queue — starts from the same request, made once by
// classify, and passes the same admission checks (admit), so no path keeps
// a copy of another's rules.

// request is one command resolved once: its table row and, for commands the
// engine executes, where its keys live.
type request struct {
	argv [][]byte
	cmd  *command.Command // nil when the lookup failed (err says why)
	err  *errReply        // unknown command, wrong arity
	// shard and slot of the keys; -1 for a command without keys. crossSlot
	// is set when the keys live on different shards.
	shard, slot int
	crossSlot   bool
	// asking is set for a command sent after ASKING and routed to the
	// shard importing its slot (askRoute, asking.go).
	asking bool
	// block is set for a blocking read given a BLOCK timeout (ms).
	block   bool
	blockMs int64
	// admitted is set once admit ran; refusal is its verdict.
	admitted bool
	refusal  *errReply
}

// classify looks argv up in the command table and routes its keys. It
// depends on nothing but argv and the slot map.
func (s *Server) classify(argv [][]byte) request {
	r := request{argv: argv, shard: -1, slot: -1}
	r.cmd, r.err = command.Lookup(argv)
	if r.err != nil {
		return r
	}
	if r.cmd.Kind == command.KindWrite || r.cmd.Kind == command.KindRead {
		r.shard, r.slot, r.crossSlot = s.route(r.cmd, argv)
		if r.cmd.Flags&command.FlagBlocking != 0 {
			r.blockMs, r.block = blockTimeout(argv)
		}
	}
	return r
}

// engineCmd reports whether the engine executes the request.
func (r *request) engineCmd() bool {
	return r.cmd != nil && (r.cmd.Kind == command.KindWrite || r.cmd.Kind == command.KindRead)
}

// admit runs the checks every command passes before it runs or is queued,
// in Redis's order: the lookup, authentication, ACL permissions, maxmemory,
// then the keys' slots. It records the command as the connection's last
// (CLIENT LIST) once it is authenticated. The verdict is kept in r: asking
// again answers the same without checking (or logging a refusal) twice.
func (s *Server) admit(c *client, r *request) *errReply {
	if !r.admitted {
		r.admitted, r.refusal = true, s.check(c, r)
	}
	return r.refusal
}

func (s *Server) check(c *client, r *request) *errReply {
	if r.err != nil {
		return r.err
	}
	cmd := r.cmd
	if !c.authed && cmd.Flags&command.FlagNoAuth == 0 {
		if cmd.Name == "exec" {
			// Redis rejects EXEC as a whole (execCommandAbort).
			c.multi = nil
			return errorf("EXECABORT Transaction discarded because of: %s", errNoAuth.Msg)
		}
		return errNoAuth
	}
	c.lastCmdName = cmd.Name
	if er := s.checkPerm(c, cmd, r.argv); er != nil {
		return er
	}
	if er := s.checkOOM(cmd); er != nil {
		return er
	}
	if r.crossSlot {
		return errCrossSlot
	}
	if s.hooks.Load() != 0 {
		return s.hooked(c, r)
	}
	return nil
}

// The hooks word says which of the features that watch every admitted
// command are on: a connection is monitoring (MONITOR, monitor.go), a
// CLIENT PAUSE is set (client_cmds.go). While both are off, which is
// nearly always, admission pays one atomic load for them.
const (
	hookMonitor uint32 = 1 << iota
	hookPause
)

func (s *Server) setHook(h uint32, on bool) {
	if on {
		s.hooks.Or(h)
	} else {
		s.hooks.And(^h)
	}
}

// hooked runs the hooks on an admitted command, in Redis's order: a
// monitor may not touch the keyspace; the command is shown to the monitors
// (except admin commands, the commands queued in a transaction, which are
// shown when EXEC runs them, and EXEC, shown after them: cmdExec); then it
// waits while a CLIENT PAUSE holds it back.
func (s *Server) hooked(c *client, r *request) *errReply {
	h := s.hooks.Load()
	if h&hookMonitor != 0 {
		if c.monitor != nil && r.cmd.Flags&(command.FlagWrite|command.FlagReadonly) != 0 {
			return errMonitorKeyspace
		}
		queued := c.multi != nil && !r.endsMulti()
		if monitored(r.cmd) && !queued && r.cmd.Name != "exec" {
			s.feedMonitors(c, r.argv)
		}
	}
	if h&hookPause != 0 {
		s.pauseWait(c, r)
	}
	return nil
}

// batchable reports whether an admitted request may join the pipeline's
// batches: a read or write of one shard, outside MULTI, not blocking.
func (r *request) batchable(c *client) bool {
	return c.multi == nil && r.engineCmd() && !r.block && r.shard >= 0 && !r.asking
}

// exec runs an admitted request outside the batches and returns its reply
// (nil when the reply was already written or the connection is closing).
func (s *Server) exec(c *client, r *request) reply {
	cmd, argv := r.cmd, r.argv
	switch {
	case cmd.Kind == command.KindLocal:
		return handlers[cmd.ID](s, c, argv)
	case r.shard < 0:
		// No keys (XGROUP HELP, or a key list the engine will refuse):
		// the answer depends on no keyspace.
		return engine.Keyless(nowMs(), argv)
	case r.block:
		return s.blockingRead(c, cmd, r.shard, r.slot, argv, r.blockMs, r.asking)
	case cmd.Kind == command.KindWrite && r.asking:
		return s.writeAsking(c, r.shard, r.slot, argv)
	case cmd.Kind == command.KindWrite:
		// The shard validates the command before proposing it (fsm.Submit),
		// so garbage never enters the log.
		return s.writeOne(c, r.shard, r.slot, argv)
	default:
		return s.readAsk(c, r.shard, r.slot, argv, r.asking)
	}
}

// runOne takes one command that is not batched: it queues it in an open
// transaction, or admits and executes it, and writes its reply.
func (s *Server) runOne(c *client, r *request, start time.Time) {
	var rep reply
	ran := false
	if c.multi != nil && !r.endsMulti() {
		rep = s.multiQueue(c, r)
	} else if er := s.admit(c, r); er != nil {
		rep = er
	} else {
		c.publish()
		rep, ran = s.exec(c, r), true
	}
	c.publish()
	write := r.cmd != nil && r.cmd.Kind != command.KindRead // a write, or EXEC
	raw, forwarded := s.maybeForward(c, rep, s.forwardUnit(c, r.argv), r.shard, write, r.block)
	switch {
	case !ran:
		if _, isErr := rep.(*engine.Error); isErr {
			s.refused(r, rep)
		}
	case forwarded:
		s.answered(c, r.cmd, r.argv, s.took(r, start), nil)
	default:
		s.answered(c, r.cmd, r.argv, s.took(r, start), rep)
	}
	if rep == nil {
		return
	}
	if forwarded {
		if write {
			c.noteForwarded()
		}
		c.writeRaw(raw)
	} else {
		c.write(rep, c.proto)
	}
	if m := c.monitor; m != nil {
		// A monitor's own commands (never batched: it may not touch
		// the keyspace) show after their replies.
		m.writeSelf()
	}
}

// took is how long r took since start; -1 for a blocked read, whose time
// is mostly spent waiting (not timed).
func (s *Server) took(r *request, start time.Time) time.Duration {
	if r.block {
		return -1
	}
	return time.Since(start)
}
