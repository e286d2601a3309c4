package resp

import (
	"time"

	"github.com/raftstream/raftstream/engine"
	"github.com/raftstream/raftstream/resp/command"
)

// What the server records about every command it answers, in one place for
// every path (runOne, the pipeline's batches, EXEC's queue): the calls and
// their durations (metrics_cmds.go: /metrics, INFO commandstats and
// latencystats), the error replies (errorstats), the slow log (slowlog.go)
// and the latency monitor (latency.go).
//
// A command's duration is the time from reading it to its reply being
// ready: for a write it includes the Raft round trip (replication and
// fsync on a quorum), which Redis's execution time has no counterpart of.

// answered records a command that ran and took d (d < 0: not timed: inside
// MULTI/EXEC, or a blocked read) and whose client got rep (nil when the
// reply came from another node: forwarded).
func (s *Server) answered(c *client, cmd *command.Command, argv [][]byte, d time.Duration, rep reply) {
	s.cmdm.observeN(cmd, d, 1)
	s.afterReply(c, cmd, argv, d, rep)
}

// afterReply is answered without the call count and duration, for the
// pipeline, which counts a unit's commands together (observeN).
func (s *Server) afterReply(c *client, cmd *command.Command, argv [][]byte, d time.Duration, rep reply) {
	s.cmdm.replied(cmd, rep, false)
	if d < 0 || cmd == nil {
		return
	}
	if us := s.slow.slower.Load(); us >= 0 && d.Microseconds() >= us && cmd.Flags&command.FlagSkipSlowlog == 0 {
		s.slow.add(c, argv, d)
	}
	if ms := s.lat.threshold.Load(); ms > 0 && d.Milliseconds() >= ms {
		event := "command"
		if cmd.Flags&command.FlagFast != 0 {
			event = "fast-command"
		}
		s.lat.add(event, d.Milliseconds(), time.Now().Unix())
	}
}

// refused records a request refused before it ran (an unknown command,
// wrong arity, authentication, ACL, maxmemory, CROSSSLOT, MULTI's queueing
// checks): a rejected call of its row when it names one.
func (s *Server) refused(r *request, rep reply) {
	cmd := r.cmd
	if cmd == nil {
		cmd = rowOf(r.argv)
	}
	s.cmdm.replied(cmd, rep, true)
}

// rowOf is the row argv names although its lookup failed: the command or
// subcommand given the wrong number of arguments (nil for an unknown one).
func rowOf(argv [][]byte) *command.Command {
	name := engine.Lower(argv[0])
	if top := command.Get(name); top != nil && top.Sub != nil && len(argv) >= 2 {
		name += "|" + engine.Lower(argv[1])
	}
	if cmd := command.Get(name); cmd != nil && cmd.Name == name {
		return cmd
	}
	return nil
}

// execAnswered records the commands EXEC ran: each counts as a call of its
// own (untimed: the transaction is timed as a whole), as in Redis.
func (s *Server) execAnswered(c *client, cmds []*command.Command, queue [][][]byte, out engine.Array) {
	for i, cmd := range cmds {
		if i < len(out) {
			s.answered(c, cmd, queue[i], -1, out[i])
		}
	}
}
