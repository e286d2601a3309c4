package cluster

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// health is this node's view of the other members: which are up, since
// when, which shards each leads (with the term it leads in), how many
// replicas each has open, and the controller Epoch each adopted. It feeds
// Topology (Up flags, leaders of shards not led here), the balancer's
// hysteresis, the controller's plans (dead members, drained members) and
// the leaderless redirect rule (a replica that knows no leader sends a
// client only to a member that fresh information says leads the shard).
//
// Two sources feed it:
//
//   - gossip (default, gossip.go): memberlist's failure detector says who
//     is alive and who is dead or gone, and each member's metadata carries
//     its leaderships, open replica count and controller Epoch. Nothing is
//     polled for a member gossip covers, so the background traffic per node
//     does not grow with the cluster (memberlist probes one member per
//     interval and gossips to a few).
//   - status polls, every pollInterval, only of the members gossip does
//     not cover: all of them when gossip is off, a member memberlist has
//     never seen (gossip off there, or not joined yet), and a member whose
//     metadata could not hold its leaderships (more than fit in 512 bytes).
//
// One goroutine polls, one (gossip's) refreshes; readers take the mutex.
type health struct {
	n     *Node
	mu    sync.Mutex
	peers map[string]*peer
	// polls counts status polls sent.
	polls atomic.Uint64
}

// peer is what health knows of one other member.
type peer struct {
	// gossip: memberlist has seen this member; gossip, not polls, then
	// says whether it is up.
	gossip bool
	up     bool
	// upSince is when it last came up (or recovered from a missed poll);
	// downSince when it was marked down.
	upSince, downSince time.Time
	// fails counts consecutive unanswered polls; a polled member is down
	// after downAfter of them, so one slow poll does not flap it.
	fails int
	// leads maps the shards it reported leading to the term.
	leads map[int]uint64
	// partial: its gossip metadata omits its leaderships (too many for
	// the metadata limit); it is polled.
	partial bool
	// hosted is how many shard replicas it reported open.
	hosted int
	// ctrl is the controller Epoch it reported adopting.
	ctrl uint64
}

func newHealth(n *Node) *health {
	return &health{n: n, peers: make(map[string]*peer)}
}

// pollInterval is how often uncovered members are polled; a polled member
// is down after downAfter consecutive unanswered polls.
const (
	pollInterval = 500 * time.Millisecond
	downAfter    = 3
)

func (h *health) loop() {
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for {
		h.poll()
		select {
		case <-h.n.shutdownCh:
			return
		case <-t.C:
		}
	}
}

// get returns id's record, creating it. Callers hold h.mu.
func (h *health) get(id string) *peer {
	p := h.peers[id]
	if p == nil {
		p = &peer{}
		h.peers[id] = p
	}
	return p
}

// prune forgets nodes that are no longer members.
func (h *health) prune(members []Member) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for id := range h.peers {
		if !slices.ContainsFunc(members, func(m Member) bool { return m.ID == id }) {
			delete(h.peers, id)
		}
	}
}

// pollTargets lists the members (other than this node) that gossip does
// not cover.
func (h *health) pollTargets(members []Member) []Member {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []Member
	for _, m := range members {
		if m.ID == h.n.id {
			continue
		}
		if p := h.peers[m.ID]; p == nil || !p.gossip || p.partial {
			out = append(out, m)
		}
	}
	return out
}

// poll asks every uncovered member for its status, in parallel, bounded by
// one interval.
func (h *health) poll() {
	st := h.n.st.Load()
	if st.members == nil {
		return
	}
	h.prune(st.members.Nodes)
	peers := h.pollTargets(st.members.Nodes)
	if len(peers) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), pollInterval)
	defer cancel()
	ch := make(chan pollResult, len(peers))
	for _, m := range peers {
		h.polls.Add(1)
		go func() {
			res, err := h.n.call(ctx, m.Bus, rpcRequest{Op: "status", From: h.n.self, Ctrl: st.members.Ctrl})
			ch <- pollResult{id: m.ID, ok: err == nil, leads: res.Leads, terms: res.LeadTerms, hosted: len(res.Applied), members: res.Members}
		}()
	}
	results := make([]pollResult, 0, len(peers))
	for range peers {
		results = append(results, <-ch)
	}
	h.record(results, time.Now())
	for _, r := range results {
		if r.ok && r.members != nil {
			h.n.adopt(r.members)
		}
	}
}

// pollResult is one member's answer to a status poll.
type pollResult struct {
	id      string
	ok      bool
	leads   []int
	terms   []uint64 // terms[i] is the term of leads[i] (absent: 0)
	hosted  int
	members *Membership // the responder's controller Membership, if newer
}

// record folds one round of poll results observed at now into the state.
func (h *health) record(results []pollResult, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range results {
		p := h.get(r.id)
		if !r.ok {
			if p.fails++; p.fails < downAfter {
				continue
			}
			p.fails = downAfter // keep the miss counted, bounded
			p.markDown(now)
			continue
		}
		if !p.up || p.fails > 0 {
			p.upSince = now // a miss restarts the balancer's hysteresis
		}
		p.up, p.fails = true, 0
		p.downSince = time.Time{}
		p.hosted = r.hosted
		p.leads = make(map[int]uint64, len(r.leads))
		for i, s := range r.leads {
			var term uint64
			if i < len(r.terms) {
				term = r.terms[i]
			}
			p.leads[s] = term
		}
	}
}

// markDown records that p went down at now; its leaderships are forgotten.
func (p *peer) markDown(now time.Time) {
	if p.up || p.downSince.IsZero() {
		p.downSince = now
	}
	p.up = false
	p.leads = nil
}

// gossipView is one member as memberlist shows it.
type gossipView struct {
	id   string
	meta gossipMeta
}

// recordGossip folds memberlist's current view (members alive; absent ones
// are dead or gone) into the state for the given members.
// Members memberlist has never seen are left to the polls.
func (h *health) recordGossip(members []Member, view map[string]gossipView, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, m := range members {
		if m.ID == h.n.id {
			continue
		}
		v, seen := view[m.ID]
		p := h.peers[m.ID]
		if !seen {
			if p != nil && p.gossip {
				p.markDown(now)
			}
			continue
		}
		p = h.get(m.ID)
		p.gossip = true
		if !p.up {
			p.upSince = now
		}
		p.up, p.fails = true, 0
		p.downSince = time.Time{}
		p.hosted, p.ctrl, p.partial = v.meta.Hosted, v.meta.Ctrl, v.meta.Partial
		if !p.partial {
			p.leads = v.meta.leads()
		}
	}
}

// up reports whether member id is up: alive to gossip, or answering
// polls.
func (h *health) up(id string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	p := h.peers[id]
	return p != nil && p.up
}

// since reports when member id last came up (zero: down).
func (h *health) since(id string) time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	if p := h.peers[id]; p != nil && p.up {
		return p.upSince
	}
	return time.Time{}
}

// upFor reports how long member id has been up without a miss (0 if down
// or its last poll went unanswered): the balancer's hysteresis.
func (h *health) upFor(id string) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	p := h.peers[id]
	if p == nil || !p.up || p.fails > 0 {
		return 0
	}
	return time.Since(p.upSince)
}

// leaderOf returns the member that fresh information says leads shard: of
// the members alive (gossip) or answering their last poll that report
// leading it, the one with the highest term; "" if none.
func (h *health) leaderOf(shard int) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	best, bestTerm := "", uint64(0)
	for id, p := range h.peers {
		if !p.up || p.fails > 0 {
			continue
		}
		if term, ok := p.leads[shard]; ok && (best == "" || term > bestTerm || term == bestTerm && id < best) {
			best, bestTerm = id, term
		}
	}
	return best
}

// downFor reports how long member id has been marked down (0 if up or
// never seen).
func (h *health) downFor(id string) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	p := h.peers[id]
	if p == nil || p.up || p.downSince.IsZero() {
		return 0
	}
	return time.Since(p.downSince)
}

// hostedBy returns how many replicas member id last reported open and
// whether it is up.
func (h *health) hostedBy(id string) (int, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	p := h.peers[id]
	if p == nil {
		return 0, false
	}
	return p.hosted, p.up
}

// newestCtrl returns the member reporting the highest controller Epoch
// above min, and that Epoch ("" if none does).
func (h *health) newestCtrl(min uint64) (string, uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	best, epoch := "", min
	for id, p := range h.peers {
		if p.up && p.ctrl > epoch {
			best, epoch = id, p.ctrl
		}
	}
	return best, epoch
}
