package fsm

import (
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// TestTransferStuckChecksTheFlag: TransferStuck reports a leader whose
// transfer flag was reported up long enough ago only while raft still
// refuses a barrier with ErrLeadershipTransferInProgress; once the flag is
// down it says no and forgets the report. The flag is held up for about an
// election timeout by a transfer to a follower that is down and behind (raft
// tries to catch it up until the transfer times out).
func TestTransferStuckChecksTheFlag(t *testing.T) {
	transferStuckChecksTheFlag(t)
}

// TestTransferStuckOutlivesALateAnswer: the answer to a proposal raft took
// before the transfer began, read after a refusal started the clock (its
// waiter ran late, as a loaded machine makes it), does not stop the clock.
func TestTransferStuckOutlivesALateAnswer(t *testing.T) {
	// Set before the cluster opens, so it is cleared after the replicas
	// (and their waiters) are gone.
	waiterHook = func() { time.Sleep(60 * time.Millisecond) }
	t.Cleanup(func() { waiterHook = nil })
	transferStuckChecksTheFlag(t)
}

func transferStuckChecksTheFlag(t *testing.T) {
	rs := clusterOf3(t, func(c *Config) {
		c.ElectionTimeout = 2 * time.Second
		c.StuckTransferAfter = 50 * time.Millisecond
	})
	l := leaderOf(t, rs)
	down := followerOf(rs, l)
	apply(t, l.Shard, incr)
	down.close(t)
	for range 3 {
		apply(t, l.Shard, incr) // the follower left is enough for a quorum
	}
	if l.TransferStuck() {
		t.Fatal("stuck before any transfer")
	}

	first := l.TransferLeadership(down.id, down.addr)
	// A second transfer is refused while the first runs: the report.
	waitFor(t, 5*time.Second, "a transfer refused as in progress", func() bool {
		return errors.Is(l.TransferLeadership(down.id, down.addr).Error(), raft.ErrLeadershipTransferInProgress)
	})
	time.Sleep(100 * time.Millisecond)
	if !l.TransferStuck() {
		t.Fatal("flag up and reported 100 ms ago (limit 50 ms): not reported stuck")
	}

	// The first transfer times out and raft lowers the flag. The report is
	// still there (nobody read the first future), so only the barrier tells.
	waitFor(t, 15*time.Second, "the flag down", func() bool { return !l.TransferStuck() })
	if since := l.transferBusySince.Load(); since != 0 {
		t.Fatalf("report kept after a barrier went through (since %v)", time.Unix(0, since))
	}
	if err := first.Error(); err == nil {
		t.Fatal("a transfer to a replica that is down succeeded")
	}
	if l.IsLeader() { // it takes writes again
		apply(t, l.Shard, incr)
	}
}
