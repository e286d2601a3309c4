package fsm

import (
	"errors"
	"fmt"

	"github.com/hashicorp/raft"
)

// proposalError maps the error of a raft.Apply future (or of the apply wait)
// to the outcome a client may rely on. This is the one place raft errors
// become fsm errors:
//
//   - ErrNotLeader, ErrLeadershipTransferInProgress: the entry was never
//     appended → *NotLeaderError (safe to retry on the leader).
//   - ErrEnqueueTimeout: raft never took the entry → ErrBusy (safe to retry).
//   - ErrLeadershipLost, ErrRaftShutdown on a future already handed to raft,
//     or anything else: the entry may be committed by a later leader →
//     ErrUnknownOutcome. Never reported as success, never as "not applied".
func (s *Shard) proposalError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipTransferInProgress):
		return s.notLeader()
	case errors.Is(err, raft.ErrEnqueueTimeout):
		return fmt.Errorf("%w: %v", ErrBusy, err)
	default:
		return fmt.Errorf("%w: %v", ErrUnknownOutcome, err)
	}
}

// notLeader describes the current leader as far as this replica knows.
func (s *Shard) notLeader() *NotLeaderError {
	addr, id := s.raft.LeaderWithID()
	return &NotLeaderError{LeaderID: string(id), LeaderAddr: string(addr)}
}
