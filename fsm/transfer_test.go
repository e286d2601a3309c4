package fsm

import (
	"errors"
	"strconv"
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
	rs := make([]*replica, 3)
	for i := range rs {
		rs[i] = openReplica(t, t.TempDir(), raft.ServerID("n"+strconv.Itoa(i+1)), "127.0.0.1:0", func(c *Config) {
			c.HeartbeatTimeout, c.ElectionTimeout, c.LeaderLeaseTimeout = time.Second, 2*time.Second, 500*time.Millisecond
			c.StuckTransferAfter = 50 * time.Millisecond
		})
	}
	servers := []raft.Server{rs[0].server(), rs[1].server(), rs[2].server()}
	for _, r := range rs {
		if err := r.BootstrapIfEmpty(servers); err != nil {
			t.Fatal(err)
		}
	}
	l := leaderOf(t, rs)
	var down *replica
	for _, r := range rs {
		if r != l {
			down = r
			break
		}
	}
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
