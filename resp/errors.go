package resp

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/raftstream/raftstream/engine"
	"github.com/raftstream/raftstream/fsm"
	"github.com/raftstream/raftstream/slots"
)

// Error replies produced by the server itself, with Redis's exact wording.
var (
	errNoAuth         = errorf("NOAUTH Authentication required.")
	errWrongPass      = errorf("WRONGPASS invalid username-password pair or user is disabled.")
	errAuthNoPass     = errorf("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?")
	errHelloNoAuth    = errorf("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time")
	errCrossSlot      = errorf("CROSSSLOT Keys in request don't hash to the same slot")
	errDBRange        = errorf("ERR DB index is out of range")
	errMultiNested    = errorf("ERR MULTI calls can not be nested")
	errExecNoMulti    = errorf("ERR EXEC without MULTI")
	errDiscardNoMulti = errorf("ERR DISCARD without MULTI")
	errNoMulti        = errorf("ERR Command not allowed inside a transaction")
	errExecAbort      = errorf("EXECABORT Transaction discarded because of previous errors.")
	errUnknownOutcome = errorf("UNKNOWN the write's outcome is unknown: it may have been applied")
	errTryAgainBusy   = errorf("TRYAGAIN the shard is busy, retry later")
	errTryAgainLeader = errorf("TRYAGAIN the shard has no leader (election in progress), retry later")
	errTryAgainRead   = errorf("TRYAGAIN the read could not confirm the shard's leader (leader change or timeout), retry later")
	errShutdown       = errorf("ERR the shard is shutting down, retry on another node")
	errClusterDown    = errorf("CLUSTERDOWN The cluster is down")
	errNotInteger     = engine.ErrNotInteger
	errSyntax         = engine.ErrSyntax
)

// ErrNoQuorum may be returned (wrapped) by a Backend when a shard has lost
// its quorum; it maps to CLUSTERDOWN.
var ErrNoQuorum = errors.New("shard has no quorum")

// mapError turns an error from the backend (Submit's future, Read) into the
// client's error reply. It is the one place where Raft and cluster errors
// get Redis wording. slot is the command's key slot (-1 if none).
func (s *Server) mapError(err error, slot int) reply {
	var nl *fsm.NotLeaderError
	var er *engine.Error
	switch {
	case errors.As(err, &nl):
		if addr := s.leaderRESPAddr(nl); addr != "" && slot >= 0 {
			return errorf("MOVED %d %s", slot, addr)
		}
		return s.leaderlessReply(nl, slot)
	case errors.Is(err, fsm.ErrUnknownOutcome), errors.Is(err, context.DeadlineExceeded):
		return errUnknownOutcome
	case errors.Is(err, fsm.ErrBusy):
		return errTryAgainBusy
	case errors.Is(err, ErrNoQuorum):
		return errClusterDown
	case errors.Is(err, fsm.ErrShutdown):
		return errShutdown
	case errors.As(err, &er):
		return er
	}
	return errorf("ERR %s", err.Error())
}

// mapReadError is mapError for a read (Backend.Read). A read whose
// leadership check (the read fence) was cut off by a leader change, or did
// not finish within the deadline, has the write's "unknown outcome", but a
// read has no effect: UNKNOWN would tell the client something may have
// changed, so it gets a retryable TRYAGAIN instead. Other errors map as for
// writes.
func (s *Server) mapReadError(err error, slot int) reply {
	if errors.Is(err, fsm.ErrUnknownOutcome) || errors.Is(err, context.DeadlineExceeded) {
		return errTryAgainRead
	}
	return s.mapError(err, slot)
}

// leaderRESPAddr finds the RESP address of the leader named in nl.
func (s *Server) leaderRESPAddr(nl *fsm.NotLeaderError) string {
	if nl.LeaderID == "" {
		return ""
	}
	for _, n := range s.be.Topology().Nodes {
		if n.ID == nl.LeaderID {
			return fmt.Sprintf("%s:%d", n.Host, n.Port)
		}
	}
	return ""
}

// leaderlessRedirectAfter is how long a replica must have heard from no
// leader before it stops answering TRYAGAIN (leaderlessReply).
const leaderlessRedirectAfter = 3 * time.Second

// errClusterDownNoLeader answers a command for a shard that has had no
// leader for longer than an election takes: no quorum of its replicas is
// reachable from here. Redis Cluster answers an unserved slot with
// "CLUSTERDOWN Hash slot not served"; cluster clients retry it.
var errClusterDownNoLeader = errorf("CLUSTERDOWN Hash slot not served: its shard has no leader (no quorum of its replicas is reachable)")

// leaderlessReply answers a command whose shard has no leader known to the
// replica that got it. Within an ordinary election (and on a replica that
// never heard from a leader) it is TRYAGAIN. Once the replica has heard
// from no leader for leaderlessRedirectAfter it is cut off or the shard
// has lost its quorum: if fresh reports from other members (gossip, polls:
// Topology's leader of the shard) name a leader elsewhere, the client is
// sent there with MOVED, so a cluster client whose slot map names this
// node reloads it instead of asking here again; otherwise CLUSTERDOWN.
// A client is only ever sent to a node that reports leading the shard, so
// two leaderless replicas never send clients to each other in a circle.
func (s *Server) leaderlessReply(nl *fsm.NotLeaderError, slot int) reply {
	if nl.LeaderID != "" || nl.LeaderlessFor < leaderlessRedirectAfter || slot < 0 {
		return errTryAgainLeader
	}
	top := s.be.Topology()
	shard := s.be.ShardOfSlot(slot)
	if shard >= 0 && shard < len(top.Shards) {
		if l := top.Shards[shard].Leader; l != "" && l != top.MyID {
			if n, ok := nodeByID(top, l); ok && n.Up {
				return errorf("MOVED %d %s:%d", slot, n.Host, n.Port)
			}
		}
	}
	return errClusterDownNoLeader
}

// slotOf is the Redis Cluster hash slot of key.
func slotOf(key []byte) int { return slots.Of(key) }
