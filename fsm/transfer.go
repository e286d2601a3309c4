package fsm

import (
	"errors"
	"time"

	"github.com/hashicorp/raft"
)

// Leadership transfers, and the one way hashicorp/raft v1.8.0 can get stuck
// in one (its issue #696). A transfer sets raft's "transfer in progress"
// flag, which makes the leader refuse every Apply and every other transfer
// (ErrLeadershipTransferInProgress) until the transfer's goroutine ends. That
// goroutine first catches the target up by handing the target's replication
// goroutine a request on a one-slot channel, and the send does not watch the
// transfer's stop channel. If the leader steps down while the slot is full,
// the replication goroutine is gone, the send blocks forever, and so does the
// flag: should the replica lead again later, the shard takes no write and no
// transfer for as long as it keeps leading. A fault run saw a shard refuse
// writes and a drain wait on it for four minutes.
//
// The replica notes what its transfers and proposals are told (noteTransfer),
// and TransferStuck reports a flag that has been up far longer than any
// transfer can last. Only a new raft instance clears it: the cluster then
// restarts the replica (its state is on disk; it rejoins as a follower).

// TransferLeadership asks raft to hand leadership to the voter to (at addr),
// or to the most up-to-date other voter when to is "". Use it instead of the
// raft instance's own calls, so that a transfer stuck in raft is noticed.
func (s *Shard) TransferLeadership(to raft.ServerID, addr raft.ServerAddress) raft.Future {
	var f raft.Future
	asked := time.Now()
	if to == "" {
		f = s.raft.LeadershipTransfer()
	} else {
		f = s.raft.LeadershipTransferToServer(to, addr)
	}
	return transferFuture{Future: f, s: s, asked: asked}
}

// transferFuture notes its outcome when it is read.
type transferFuture struct {
	raft.Future
	s     *Shard
	asked time.Time
}

func (f transferFuture) Error() error {
	err := f.Future.Error()
	f.s.noteTransfer(err, f.asked)
	return err
}

// noteTransfer records what a transfer or a proposal handed to raft at
// asked was told. "In progress" starts the clock (if it is not running).
// Any other answer stops a clock started before asked: a proposal or a
// transfer that raft took shows the flag was down after the refusal that
// started it, and a transfer's own outcome (the stuck one answers "timeout"
// before it hangs) ends that transfer; a flag still up is reported by the
// next refusal. An answer to something asked before the clock started
// (a proposal taken just before a transfer began, read late) says nothing
// about the flag now and leaves the clock running.
func (s *Shard) noteTransfer(err error, asked time.Time) {
	if errors.Is(err, raft.ErrLeadershipTransferInProgress) {
		s.transferBusySince.CompareAndSwap(0, time.Now().UnixNano())
		return
	}
	if since := s.transferBusySince.Load(); since != 0 && since <= asked.UnixNano() {
		s.transferBusySince.CompareAndSwap(since, 0)
	}
}

// StuckTransferAfter is how long raft's transfer flag must have stayed up,
// with nothing seen to clear it, before TransferStuck checks it, or twice
// the election timeout plus 20 s if that is longer. A transfer that works
// ends within two election timeouts and one TimeoutNow RPC (the cluster's
// transport gives up on an RPC after 10 s and a dial after 5).
const StuckTransferAfter = 30 * time.Second

// TransferStuck reports whether this replica leads, its transfer flag was
// reported up long enough ago (StuckTransferAfter; cfg.StuckTransferAfter
// in tests) with nothing seen to clear it since, and it is still up: a
// barrier proposed now is refused with ErrLeadershipTransferInProgress. A
// barrier that is accepted clears the record. It blocks for up to a second.
func (s *Shard) TransferStuck() bool {
	since := s.transferBusySince.Load()
	after := s.cfg.StuckTransferAfter
	if after <= 0 {
		after = max(StuckTransferAfter, 2*s.cfg.ElectionTimeout+20*time.Second)
	}
	if since == 0 || time.Since(time.Unix(0, since)) < after || !s.IsLeader() {
		return false
	}
	err := s.raft.Barrier(time.Second).Error()
	if errors.Is(err, raft.ErrLeadershipTransferInProgress) {
		return true
	}
	if err == nil {
		s.transferBusySince.Store(0)
	}
	return false
}
