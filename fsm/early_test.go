package fsm

import (
	"sync"
	"testing"

	"github.com/hashicorp/raft"
)

// earlyCall is one Config.EarlyReplicate call as a test recorded it.
type earlyCall struct {
	prevTerm, commit uint64
	first, last      uint64
	term             uint64 // of every entry (checked when recorded)
}

// TestEarlyReplicateSeesTheLeadersOwnEntries: a 3-replica group hands
// Config.EarlyReplicate every batch its leader writes, before the write,
// with the previous entry's term and a commit index below the batch; and
// never the entries a follower stores from its leader.
func TestEarlyReplicateSeesTheLeadersOwnEntries(t *testing.T) {
	var mu sync.Mutex
	calls := map[raft.ServerID][]earlyCall{}
	var bad []string
	rs := clusterOf3(t, func(c *Config) {
		id := c.LocalID
		c.EarlyReplicate = func(prevTerm, commit uint64, logs []*raft.Log) {
			mu.Lock()
			defer mu.Unlock()
			ec := earlyCall{prevTerm: prevTerm, commit: commit, first: logs[0].Index, last: logs[len(logs)-1].Index, term: logs[0].Term}
			for i, l := range logs {
				if l.Index != ec.first+uint64(i) || l.Term != ec.term {
					bad = append(bad, "a batch that is not one term's contiguous entries")
				}
			}
			calls[id] = append(calls[id], ec)
		}
	})
	l := leaderOf(t, rs)
	for range 20 {
		apply(t, l.Shard, unit(cmd("T.INCR", "x")))
	}
	term, last := l.Raft().CurrentTerm(), l.Raft().LastIndex()
	mu.Lock()
	defer mu.Unlock()
	if len(bad) > 0 {
		t.Fatal(bad[0])
	}
	for _, r := range rs {
		if r == l {
			continue
		}
		for _, c := range calls[r.id] {
			if c.term >= term {
				t.Fatalf("follower %s handed entries %d-%d of term %d (the leader's term is %d)", r.id, c.first, c.last, c.term, term)
			}
		}
	}
	var next uint64
	for _, c := range calls[l.id] {
		if c.term != term {
			continue
		}
		if next != 0 && c.first != next {
			t.Fatalf("leader's batches skip from %d to %d", next, c.first)
		}
		if next != 0 && c.prevTerm != term {
			t.Fatalf("batch %d-%d: previous term %d, want %d", c.first, c.last, c.prevTerm, term)
		}
		if c.commit >= c.first {
			t.Fatalf("batch %d-%d handed with commit index %d", c.first, c.last, c.commit)
		}
		next = c.last + 1
	}
	if next != last+1 {
		t.Fatalf("the leader's batches of term %d end before %d, its last index %d", term, next, last)
	}
}
