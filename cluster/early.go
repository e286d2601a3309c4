package cluster

import (
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// Early replication: a leader's followers write its new entries while the
// leader writes them.
//
// hashicorp/raft's leader writes a batch to its own log (fsync included)
// and only then wakes its replication goroutines, so an entry's commit
// waits for two disk writes in series: the leader's, then a follower's.
// Raft does not need the order (the leader's write and the followers' may
// run in parallel, as long as the leader counts itself only once its own
// write is durable), and the leader's log store is ours: fsm hands every
// batch the leader is about to write to ReplicateEarly
// (fsm.Config.EarlyReplicate), which sends it at once, over the raft bus,
// as an ordinary AppendEntries of the leader's term to each follower known
// to be caught up to the entry before it.
//
// Why it is safe: the request is one the leader could have sent (its
// header and term, the entries it is appending with the term of the entry
// before them, and a commit index raft reports committed), so the
// follower checks and stores it as it would raft's own: only if its log
// matches up to the previous entry, answering success once the entries are
// on its disk. Raft's own AppendEntries for those entries, sent as ever
// after the leader's write, is then answered with that success instead of
// being sent (answered): the same term, previous entry and entries, so the
// same fact, that the follower durably holds the leader's log up to the
// last of them; it is a raft answer that arrived early, as a delayed
// network answer could. Otherwise raft's request goes as usual, and the
// follower skips what it already has. Commitment thus counts the leader
// once its own write is durable and a follower once it answered success,
// as before; what changes is when the follower's write starts: an entry
// commits after the slower of the two writes rather than their sum. A
// follower's commit index lags a batch, as with raft's own requests (each
// carries the index of before its entries), and raft's commit-timeout
// request, which carries no entries, is never answered early.
//
// Which followers: one whose last answer to raft's own AppendEntries (not
// a heartbeat) in the leader's term was success, within earlyFresh, whose
// log, counting what was sent early since, ends exactly before the batch,
// and that has answered the last early request (one in flight per
// follower, as raft's own replication has). Anything else (a follower catching up, an early request
// refused, a new term) stops early sends to that follower until raft's
// replication catches it up again.

// earlyFresh is how recent a follower's last successful answer to raft's
// own AppendEntries must be for it to be sent entries early: a follower
// that raft stopped replicating to (removed, or gone) is not fed past it.
const earlyFresh = time.Second

// earlyPeer is what early sends to one follower need.
type earlyPeer struct {
	target raft.ServerAddress
	header raft.RPCHeader // the leader's, from raft's last request
	leader []byte
	term   uint64
	// through is the index the follower's log matches the leader's up to
	// once what was sent to it is stored; 0 while early sends are off.
	through uint64
	fresh   time.Time // raft's last successful AppendEntries with entries
	// pending is the latest early request, answered or not.
	pending *earlyCall
}

// earlyCall is one early request to a follower and, once done is closed,
// its outcome.
type earlyCall struct {
	term, prev, prevTerm, last uint64
	done                       chan struct{}
	ok                         bool // the follower answered success
	resp                       raft.AppendEntriesResponse
}

// unanswered reports whether c is an early request still under way.
func (c *earlyCall) unanswered() bool {
	if c == nil {
		return false
	}
	select {
	case <-c.done:
		return false
	default:
		return true
	}
}

// earlyPeers are a group's followers as early replication tracks them.
type earlyPeers struct {
	mu    sync.Mutex
	peers map[raft.ServerID]*earlyPeer
}

// observe records the outcome of raft's own AppendEntries to id.
func (e *earlyPeers) observe(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse, err error) {
	if isHeartbeat(args) {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	p := e.peers[id]
	if err != nil || !resp.Success || resp.Term != args.Term {
		if p != nil {
			p.through = 0
		}
		return
	}
	if p == nil {
		if e.peers == nil {
			e.peers = map[raft.ServerID]*earlyPeer{}
		}
		p = &earlyPeer{}
		e.peers[id] = p
	}
	if p.term != args.Term {
		p.term, p.through = args.Term, 0
	}
	p.target, p.header, p.leader = target, args.RPCHeader, args.Leader
	if last := args.PrevLogEntry + uint64(len(args.Entries)); last > p.through {
		p.through = last
	}
	p.fresh = time.Now()
}

// earlySend is one early request and its follower.
type earlySend struct {
	id     raft.ServerID
	target raft.ServerAddress
	req    raft.AppendEntriesRequest
	call   *earlyCall
}

// take returns the requests for the followers that should get logs early,
// counting the logs as sent to them.
func (e *earlyPeers) take(prevTerm, commit uint64, logs []*raft.Log, sends []earlySend) []earlySend {
	term, prev, last := logs[0].Term, logs[0].Index-1, logs[len(logs)-1].Index
	now := time.Now()
	e.mu.Lock()
	defer e.mu.Unlock()
	for id, p := range e.peers {
		if p.term != term || p.through != prev || now.Sub(p.fresh) > earlyFresh || p.pending.unanswered() {
			continue
		}
		p.through = last
		p.pending = &earlyCall{term: term, prev: prev, prevTerm: prevTerm, last: last, done: make(chan struct{})}
		sends = append(sends, earlySend{id: id, target: p.target, call: p.pending, req: raft.AppendEntriesRequest{
			RPCHeader: p.header, Term: term, Leader: p.leader,
			PrevLogEntry: prev, PrevLogTerm: prevTerm, Entries: logs, LeaderCommitIndex: commit,
		}})
	}
	return sends
}

// ReplicateEarly sends logs, which this group's leader is about to write,
// to its caught-up followers over the raft bus (fsm.Config.EarlyReplicate),
// with commit, an index the leader knows committed. It runs on raft's main
// goroutine, so it only decides: a goroutine per follower sends the request
// and awaits the answer, so that a follower whose connection stalls holds
// up neither the leader nor the early answers of the others.
func (t *busTransport) ReplicateEarly(prevTerm, commit uint64, logs []*raft.Log) {
	t.replicateEarly(prevTerm, commit, logs)
}

// replicateEarly is ReplicateEarly, returning how many followers it sends
// logs to.
func (t *busTransport) replicateEarly(prevTerm, commit uint64, logs []*raft.Log) int {
	select {
	case <-t.closeCh:
		return 0
	default:
	}
	sends := t.early.take(prevTerm, commit, logs, nil)
	for i := range sends {
		go t.sendEarly(&sends[i]) // bounded: the bus timeout, or the transport's Close
	}
	return len(sends)
}

// sendEarly sends one early request and records its answer: none when
// the follower has no live connection (it gets raft's requests) or the
// request could not be sent.
func (t *busTransport) sendEarly(s *earlySend) {
	var pc *peerConn
	if p, err := t.peer(s.id, s.target); err == nil {
		pc = p.live() // never dials
	}
	if pc == nil {
		t.early.finish(s.id, s.call, nil)
		return
	}
	r := new(raft.AppendEntriesResponse)
	id, c, err := pc.start(t.group.id, &s.req, r)
	if err != nil {
		t.early.finish(s.id, s.call, nil)
		return
	}
	t.rb.stats.early.Add(1)
	var resp *raft.AppendEntriesResponse
	if pc.wait(id, c, t.rb.timeout, t.closeCh) == nil {
		resp = r
	}
	if !t.early.finish(s.id, s.call, resp) {
		t.rb.stats.earlyFailed.Add(1)
	}
}

// finish records call's answer (nil: none), turning early sends to id off
// unless it is success, and reports whether it is.
func (e *earlyPeers) finish(id raft.ServerID, call *earlyCall, resp *raft.AppendEntriesResponse) bool {
	call.ok = resp != nil && resp.Success && resp.Term == call.term
	if call.ok {
		call.resp = *resp
	} else {
		e.mu.Lock()
		if p := e.peers[id]; p != nil && p.term == call.term {
			p.through = 0
		}
		e.mu.Unlock()
	}
	close(call.done)
	return call.ok
}

// answered fills resp with the follower's answer to the early request
// that carried what args carries (the same term, previous entry and
// entries; the commit index may be older, see above), waiting for it if it
// is still under way; false, with resp untouched, when there is none or it
// did not succeed (raft's request is then sent as usual). That answer is
// the follower's to args as well: it stored those entries, after a
// matching previous entry, in args' term. It is what the follower would
// answer args with (success, having skipped the entries it already has),
// given earlier.
func (e *earlyPeers) answered(id raft.ServerID, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse, timeout time.Duration, stop <-chan struct{}) bool {
	if len(args.Entries) == 0 {
		return false
	}
	e.mu.Lock()
	var c *earlyCall
	if p := e.peers[id]; p != nil {
		c = p.pending
	}
	e.mu.Unlock()
	if c == nil || c.term != args.Term || c.prev != args.PrevLogEntry || c.prevTerm != args.PrevLogTerm ||
		c.last != args.PrevLogEntry+uint64(len(args.Entries)) {
		return false
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-c.done:
	case <-timer.C:
		return false
	case <-stop:
		return false
	}
	if !c.ok {
		return false
	}
	*resp = c.resp
	return true
}
