package cluster

import (
	"context"
	"sync"
	"time"
)

// health polls every other member's status RPC and remembers which members
// answer and which shards each leads. It feeds Topology (Up flags, leaders of
// shards not hosted here) and the balancer. One goroutine writes; readers
// take the mutex.
type health struct {
	n  *Node
	mu sync.Mutex
	// upSince is when a member last started answering; absent: down.
	upSince map[string]time.Time
	// fails counts a member's consecutive unanswered polls; it is marked
	// down after downAfter of them, so one slow poll on a loaded machine
	// does not flap it.
	fails map[string]int
	// leader[shard] is the node ID that last reported leading it.
	leader map[int]string
	// downSince is when a member was marked down (absent while up).
	downSince map[string]time.Time
	// applied[id][shard] is the applied index member id last reported for
	// its replica of shard (catch-up of new replicas).
	applied map[string]map[int]uint64
	// hosted[id] is how many shard replicas member id last reported open
	// (a draining node is dropped once it reports none).
	hosted map[string]int
}

func newHealth(n *Node) *health {
	return &health{n: n, upSince: make(map[string]time.Time), fails: make(map[string]int), leader: make(map[int]string),
		downSince: make(map[string]time.Time), applied: make(map[string]map[int]uint64), hosted: make(map[string]int)}
}

// pollInterval is how often members are polled; a member is down after
// downAfter consecutive unanswered polls.
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

// poll asks every member for its status, in parallel, bounded by one
// interval.
func (h *health) poll() {
	st := h.n.st.Load()
	if st.members == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), pollInterval)
	defer cancel()
	var peers []Member
	for _, m := range st.members.Nodes {
		if m.ID != h.n.id {
			peers = append(peers, m)
		}
	}
	ch := make(chan pollResult, len(peers))
	for _, m := range peers {
		go func() {
			res, err := h.n.call(ctx, m.Bus, rpcRequest{Op: "status", From: h.n.self, Ctrl: st.members.Ctrl})
			ch <- pollResult{id: m.ID, ok: err == nil, leads: res.Leads, applied: res.Applied, hosted: len(res.Applied), members: res.Members}
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
	applied map[int]uint64
	hosted  int
	members *Membership // the responder's controller Membership, if newer
}

// record folds one round of poll results observed at now into the state.
func (h *health) record(results []pollResult, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range results {
		if !r.ok {
			if h.fails[r.id]++; h.fails[r.id] < downAfter {
				continue
			}
			h.fails[r.id] = downAfter // keep the miss counted, bounded
			if _, up := h.upSince[r.id]; up || h.downSince[r.id].IsZero() {
				h.downSince[r.id] = now
			}
			delete(h.upSince, r.id)
			for s, id := range h.leader {
				if id == r.id {
					delete(h.leader, s)
				}
			}
			continue
		}
		if _, ok := h.upSince[r.id]; !ok || h.fails[r.id] > 0 {
			h.upSince[r.id] = now // a miss restarts the balancer's hysteresis
		}
		h.fails[r.id] = 0
		delete(h.downSince, r.id)
		h.applied[r.id] = r.applied
		h.hosted[r.id] = r.hosted
		for s, id := range h.leader {
			if id == r.id {
				delete(h.leader, s)
			}
		}
		for _, s := range r.leads {
			h.leader[s] = r.id
		}
	}
}

// up reports whether member id answered the last poll and gossip (if on)
// does not report it failed.
func (h *health) up(id string) bool {
	if h.n.gossipDead(id) {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.upSince[id]
	return ok
}

// since reports when member id last started answering (zero: down).
func (h *health) since(id string) time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.upSince[id]
}

// upFor reports how long member id has been answering without a miss (0
// if down or its last poll went unanswered): the balancer's hysteresis.
func (h *health) upFor(id string) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	t, ok := h.upSince[id]
	if !ok || h.fails[id] > 0 || h.n.gossipDead(id) {
		return 0
	}
	return time.Since(t)
}

// leaderOf returns the member that last reported leading shard, or "".
func (h *health) leaderOf(shard int) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.leader[shard]
}

// downFor reports how long member id has been marked down (0 if up or
// never polled).
func (h *health) downFor(id string) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	t, ok := h.downSince[id]
	if !ok {
		return 0
	}
	return time.Since(t)
}

// appliedOf returns the applied index member id last reported for shard,
// and whether it reported one.
func (h *health) appliedOf(id string, shard int) (uint64, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	a, ok := h.applied[id][shard]
	return a, ok
}

// hostedBy returns how many replicas member id last reported open and
// whether it answered the last poll.
func (h *health) hostedBy(id string) (int, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, up := h.upSince[id]
	return h.hosted[id], up
}
