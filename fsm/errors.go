package fsm

import (
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
)

// proposalError maps the error of a raft.Apply future (or of the apply wait)
// to the outcome a client may rely on. This is the one place raft errors
// become fsm errors:
//
//   - ErrNotLeader, ErrLeadershipTransferInProgress: the entry was never
//     appended → *NotLeaderError (safe to retry on the leader). A replica
//     that lost its leader a moment ago waits for the next one to name it
//     (awaitLeader). During a
//     leadership transfer this replica still names itself as leader, which
//     would send a client straight back here; the error then waits (at
//     most one election timeout) for the new leader and names it, or names
//     no leader (resp replies TRYAGAIN) if none emerged.
//   - ErrEnqueueTimeout: raft never took the entry → ErrBusy (safe to retry).
//   - ErrLeadershipLost, ErrRaftShutdown on a future already handed to raft,
//     or anything else: the entry may be committed by a later leader →
//     ErrUnknownOutcome. Never reported as success, never as "not applied".
func (s *Shard) proposalError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, raft.ErrLeadershipTransferInProgress):
		return s.notLeaderAfterTransfer()
	case errors.Is(err, raft.ErrNotLeader):
		nl := s.notLeader()
		if nl.LeaderID == "" && s.electionPending() {
			if nl = s.awaitLeader(); nl == nil {
				return &NotLeaderError{} // leads again, but the entry was refused: retry
			}
		}
		return nl
	case errors.Is(err, raft.ErrEnqueueTimeout):
		return fmt.Errorf("%w: %v", ErrBusy, err)
	default:
		return fmt.Errorf("%w: %v", ErrUnknownOutcome, err)
	}
}

// notLeader describes the current leader as far as this replica knows.
func (s *Shard) notLeader() *NotLeaderError {
	addr, id := s.raft.LeaderWithID()
	nl := &NotLeaderError{LeaderID: string(id), LeaderAddr: string(addr)}
	if id == "" {
		if last := s.raft.LastContact(); !last.IsZero() {
			nl.LeaderlessFor = time.Since(last)
		}
	}
	return nl
}

// notLeaderAfterTransfer is notLeader once the transfer this replica started
// has settled: it polls until the known leader is another replica, the
// election timeout passes, or the shard shuts down. It never names this
// replica (a MOVED back here would loop): an unsettled transfer reports an
// unknown leader.
func (s *Shard) notLeaderAfterTransfer() *NotLeaderError {
	deadline := time.Now().Add(s.cfg.ElectionTimeout)
	for {
		nl := s.notLeader()
		if nl.LeaderID != "" && nl.LeaderID != string(s.cfg.LocalID) {
			return nl
		}
		if !time.Now().Before(deadline) {
			return &NotLeaderError{}
		}
		select {
		case <-s.raftDown:
			return &NotLeaderError{}
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// electionPending reports whether this replica lost its leader within the
// last two election timeouts and knows none yet: a leader is likely about
// to emerge (an election, or the successor of a leader that stepped down).
// Past that the replica is taken to be cut off, and callers get their
// answer at once.
func (s *Shard) electionPending() bool {
	lost := s.stats.leaderLost.Load()
	return lost != 0 && time.Since(time.Unix(0, lost)) < 2*s.cfg.ElectionTimeout
}

// awaitLeader waits, at most one election timeout, for the shard to have a
// leader. It returns nil if this replica leads, else the NotLeaderError as
// things stand then: naming the new leader, or none if none emerged in
// time. It never names this replica (a MOVED back here would loop).
func (s *Shard) awaitLeader() *NotLeaderError {
	deadline := time.Now().Add(s.cfg.ElectionTimeout)
	for {
		if s.IsLeader() {
			return nil
		}
		nl := s.notLeader()
		if nl.LeaderID == string(s.cfg.LocalID) {
			nl = &NotLeaderError{LeaderlessFor: nl.LeaderlessFor}
		}
		if nl.LeaderID != "" || !time.Now().Before(deadline) {
			return nl
		}
		select {
		case <-s.raftDown:
			return nl
		case <-time.After(5 * time.Millisecond):
		}
	}
}
