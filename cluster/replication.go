package cluster

import (
	"context"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// What WAIT needs: how many other replicas of a shard hold a log index.
//
// hashicorp/raft keeps each follower's match index to itself, but every
// AppendEntries (and InstallSnapshot) this node sends as a shard's leader
// goes through the shard's transport, which is ours (ackingTransport,
// transport.go). A successful AppendEntries response means the follower's
// log now matches the leader's up to PrevLogEntry+len(Entries), and
// hashicorp/raft answers success only after storing the entries (the node
// log fsyncs them before StoreLogs returns); a successful InstallSnapshot
// means it holds everything up to the snapshot's last index. The tracker
// records the highest such index per follower.
//
// Why counts stay true: an index recorded for a follower in term T is on
// its disk and matches the leader of T there. Raft never removes a
// committed entry from a log, and a write is answered only once its entry
// is committed, so a follower counted for a client's acknowledged write
// keeps it. The tracker nevertheless starts empty in each new term: a new
// leadership counts only the acknowledgements it has seen itself.
//
// A connection that wrote nothing asks about index 0, which Redis answers
// with its connected replicas: here, the followers that acknowledged
// something (a heartbeat will do) within the last election timeout, the
// time after which a follower that hears nothing from its leader would
// start an election. A stored index needs no such freshness: a follower
// that stopped answering still has it on disk.

// WaitReplicas reports how many other replicas of shard have stored the
// log up to index, waiting (bounded by ctx) until at least want have. It
// answers from this node's view as the shard's leader: leading is false,
// and n 0, at once when no local replica leads the shard, since only the
// leader sees its followers' acknowledgements. Index 0 counts the replicas
// that acknowledged anything in the current term (connected ones).
func (n *Node) WaitReplicas(ctx context.Context, shard int, index uint64, want int) (count int, leading bool) {
	ls := n.shard(shard)
	if ls == nil || ls.acks == nil {
		return 0, false
	}
	return ls.acks.await(ctx, ls.s.Raft(), raft.ServerID(n.id), index, want)
}

// replication tracks the followers' acknowledged log indexes of one shard
// group this node has led.
//
// Invariant: acked holds only acknowledgements of AppendEntries and
// InstallSnapshot requests sent in term; each index only grows.
type replication struct {
	// live is how recent an acknowledgement must be for its follower to
	// count as connected (index 0).
	live time.Duration

	mu    sync.Mutex
	term  uint64
	acked map[raft.ServerID]peerAck
	// waiters counts the callers blocked in await. Only while it is
	// non-zero does an advance close changed (and make a new one): with
	// nobody waiting, recording an acknowledgement costs a map update.
	waiters int
	changed chan struct{}
}

// peerAck is a follower's highest acknowledged index and when it last
// acknowledged anything.
type peerAck struct {
	index uint64
	at    time.Time
}

func newReplication(live time.Duration) *replication {
	return &replication{live: live, acked: map[raft.ServerID]peerAck{}, changed: make(chan struct{})}
}

// ack records that peer acknowledged the log up to index in reply to a
// request of term. Called by the transport on raft's replication
// goroutines, after every successful response; it never blocks for long.
// A request of a newer term starts a new leadership: the old
// acknowledgements are forgotten. One of an older term is ignored.
func (r *replication) ack(peer raft.ServerID, term, index uint64) {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case term < r.term:
		return
	case term > r.term:
		r.term = term
		clear(r.acked)
	}
	cur, seen := r.acked[peer]
	wasLive := seen && now.Sub(cur.at) <= r.live
	cur.at = now
	advanced := !seen || index > cur.index
	if advanced {
		cur.index = index
	}
	r.acked[peer] = cur
	if (advanced || !wasLive) && r.waiters > 0 {
		close(r.changed)
		r.changed = make(chan struct{})
	}
}

// stored returns the highest index peer acknowledged storing in term, and
// whether it acknowledged anything in term.
func (r *replication) stored(peer raft.ServerID, term uint64) (uint64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.term != term {
		return 0, false
	}
	a, ok := r.acked[peer]
	return a.index, ok
}

// count is how many of peers have acknowledged index or more in term; for
// index 0, how many acknowledged anything (a heartbeat included) within
// live of now: the connected ones. Callers hold r.mu.
func (r *replication) count(term uint64, peers []raft.ServerID, index uint64, now time.Time) int {
	if r.term != term {
		return 0
	}
	n := 0
	for _, p := range peers {
		a, seen := r.acked[p]
		switch {
		case !seen:
		case index == 0 && now.Sub(a.at) <= r.live:
			n++
		case index > 0 && a.index >= index:
			n++
		}
	}
	return n
}

// await returns how many of the shard's other servers have acknowledged
// index or more in the leader's current term, once at least want have, or
// when ctx ends, or at once if this replica does not lead the shard
// (leading false): it then sees no acknowledgements. It waits on the
// tracker's condition, woken by acknowledgements, never polling.
func (r *replication) await(ctx context.Context, rf *raft.Raft, self raft.ServerID, index uint64, want int) (n int, leading bool) {
	for {
		// Read per round, outside the tracker's lock (which the
		// replication goroutines take): the role, term and configuration
		// may change while a caller waits (raft reads them lock-free).
		if rf.State() != raft.Leader {
			return 0, false
		}
		term, peers := rf.CurrentTerm(), otherServers(rf, self)
		r.mu.Lock()
		n = r.count(term, peers, index, time.Now())
		if n >= want || ctx.Err() != nil {
			r.mu.Unlock()
			return n, true
		}
		ch := r.changed
		r.waiters++
		r.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
		}
		r.mu.Lock()
		r.waiters--
		r.mu.Unlock()
	}
}

// otherServers lists the servers of rf's latest configuration other than
// self: voters and non-voters alike, since each holds a copy of the log.
func otherServers(rf *raft.Raft, self raft.ServerID) []raft.ServerID {
	f := rf.GetConfiguration()
	if f.Error() != nil {
		return nil
	}
	servers := f.Configuration().Servers
	out := make([]raft.ServerID, 0, len(servers))
	for _, s := range servers {
		if s.ID != self {
			out = append(out, s.ID)
		}
	}
	return out
}
