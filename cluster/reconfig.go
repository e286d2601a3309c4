package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"time"

	"github.com/hashicorp/raft"
)

// Membership changes of a running cluster (DESIGN.md, "Reconfiguration").
//
// The controller's Membership is the desired topology: the node set and
// each shard's replica set. Only the controller leader changes it, one
// proposal (Epoch+1) at a time: a node joins (join RPC), a node is marked
// draining (remove RPC, RemoveNode), replicas are re-placed (rebalance) when
// the eligible node set changes or a member has been dead for DeadAfter,
// and a drained node is dropped. Every node adopts the controller's
// Membership (controller voters from their replica, others from status
// polls) and then converges locally, declaratively:
//
//   - a node opens (without bootstrapping) the replicas placed on it, and
//     closes and deletes those no longer placed on it once its shard's Raft
//     configuration no longer lists it (or, never told of its removal, it
//     has not heard from the shard's leader for drainGrace);
//   - the leader of each shard makes one Raft configuration change at a
//     time towards the desired set: add a missing replica as non-voter,
//     promote it once caught up, then remove surplus voters (handing
//     leadership over first when the surplus one is itself).
//
// So a replica is always added (and caught up) before the one it replaces
// is removed, and a shard never has fewer voters than its desired set.

// reconcileInterval is how often nodes converge towards the Membership and
// the controller leader re-plans.
const reconcileInterval = 250 * time.Millisecond

// drainGrace is how long a replica no longer placed on this node, whose
// own Raft configuration still lists it, must go without hearing from a
// leader (while another member leads its shard) before it is closed: see
// leftBehind.
const drainGrace = 5 * time.Second

// gossipRetry is how often a node whose gossip could not start (its UDP
// port taken, its advertised host not resolvable yet) tries again.
const gossipRetry = 10 * time.Second

// catchUpLag is how many entries a non-voter may trail the leader's
// applied index and still be promoted.
const catchUpLag = 64

// adopt makes got (a controller Membership) this node's Membership if it is
// newer than the one last adopted. Its own addresses are kept as they are
// now; the local Epoch moves past both the old local one and got's.
func (n *Node) adopt(got *Membership) {
	if got == nil || got.check(n.formedShards()) != nil {
		return
	}
	n.metaMu.Lock()
	defer n.metaMu.Unlock()
	cur := n.meta.Members
	if cur == nil || got.Epoch <= cur.Ctrl {
		return
	}
	m := got.clone()
	m.Ctrl = got.Epoch
	m.Epoch = max(cur.Epoch+1, got.Epoch)
	if i := slices.IndexFunc(m.Nodes, func(x Member) bool { return x.ID == n.id }); i >= 0 {
		m.Nodes[i] = n.self
	}
	meta := n.meta
	meta.Members = m
	if err := saveMeta(n.dir, meta); err != nil {
		n.log.Error("persisting membership", "err", err)
		return
	}
	n.meta = meta
	for _, mb := range m.Nodes {
		if mb.ID != n.id {
			n.book.add(mb)
		}
	}
	n.updateState(func(old *state) *state { return &state{members: m, shards: old.shards} })
	n.log.Info("membership adopted", "ctrl", got.Epoch, "epoch", m.Epoch, "nodes", len(m.Nodes))
}

// join asks the controller leader, through any member of formed, to add
// this node, and returns the Membership that includes it.
func (n *Node) join(ctx context.Context, formed *Membership) (*Membership, error) {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for attempt := 0; ; attempt++ {
		for _, mb := range formed.Nodes {
			cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			res, err := n.call(cctx, mb.Bus, rpcRequest{Op: "join", From: n.self})
			cancel()
			if err == nil && res.Members != nil {
				if _, ok := res.Members.Node(n.id); ok {
					m := res.Members.clone()
					m.Ctrl = m.Epoch // adopted: never bootstrap from it
					n.log.Info("joined running cluster", "via", mb.Bus, "epoch", m.Epoch)
					return m, nil
				}
			}
			if err != nil && attempt%25 == 0 {
				n.log.Info("join: not accepted yet", "via", mb.Bus, "err", err)
			}
			if err != nil && err.Error() == errRemoved.Error() {
				return nil, fmt.Errorf("cluster: %w", errRemoved)
			}
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("cluster: joining: %w", ctx.Err())
		case <-n.shutdownCh:
			return nil, errors.New("cluster: node closed while joining")
		case <-t.C:
		}
	}
}

var (
	errNotCtrlLeader = errors.New("not the controller leader")
	errRemoved       = errors.New("node was removed from the cluster; wipe its data dir to join as a new node")
)

// ctrlPropose applies f to a copy of the controller's Membership and
// proposes the result with the next Epoch, if f changed it. Controller
// leader only.
func (n *Node) ctrlPropose(f func(m *Membership) error) (*Membership, error) {
	c := n.ctrl.Load()
	if c == nil || c.r.State() != raft.Leader {
		return nil, errNotCtrlLeader
	}
	n.ctrlMu.Lock()
	defer n.ctrlMu.Unlock()
	got := c.fsm.get()
	if got == nil {
		return nil, errNotCtrlLeader
	}
	m := got.clone()
	m.Ctrl = 0
	if err := f(m); err != nil {
		return got, err
	}
	if reflect.DeepEqual(m.Nodes, got.Nodes) && reflect.DeepEqual(m.Shards, got.Shards) &&
		slices.Equal(m.Draining, got.Draining) && slices.Equal(m.Removed, got.Removed) &&
		slices.Equal(m.CtrlVoters, got.CtrlVoters) && m.Slots.equal(got.Slots) &&
		reflect.DeepEqual(m.Policy, got.Policy) {
		return got, nil
	}
	m.Epoch = got.Epoch + 1
	if err := m.check(n.formedShards()); err != nil {
		return got, err
	}
	b, _ := json.Marshal(topoEntry{Members: m})
	if err := c.r.Apply(b, 5*time.Second).Error(); err != nil {
		return got, err
	}
	return m, nil
}

// ctrlJoin adds node mb to the cluster (no replicas yet: the next plan
// places some on it). Joining again is harmless; a removed ID is refused.
func (n *Node) ctrlJoin(mb Member) (*Membership, error) {
	if !validNodeID(mb.ID) {
		return nil, fmt.Errorf("bad node id %q", mb.ID)
	}
	return n.ctrlPropose(func(m *Membership) error {
		if slices.Contains(m.Removed, mb.ID) {
			return errRemoved
		}
		i := slices.IndexFunc(m.Nodes, func(x Member) bool { return x.ID == mb.ID })
		if i >= 0 {
			m.Nodes[i] = mb
			return nil
		}
		m.Nodes = append(m.Nodes, mb)
		slices.SortFunc(m.Nodes, byID)
		n.log.Info("controller: node joins", "id", mb.ID, "resp", mb.RESPAddr())
		return nil
	})
}

// ctrlRemove marks member id as draining.
func (n *Node) ctrlRemove(id string) error {
	_, err := n.ctrlPropose(func(m *Membership) error {
		if _, ok := m.Node(id); !ok {
			if slices.Contains(m.Removed, id) {
				return nil
			}
			return fmt.Errorf("no member %q", id)
		}
		if len(m.Nodes)-len(m.Draining) <= 1 && !slices.Contains(m.Draining, id) {
			return errors.New("cannot remove the last node")
		}
		if !slices.Contains(m.Draining, id) {
			m.Draining = append(m.Draining, id)
			slices.Sort(m.Draining)
			n.log.Info("controller: draining node", "id", id)
		}
		return nil
	})
	return err
}

// ctrlPlan is the controller leader's periodic step: re-place replicas
// over the eligible nodes (members neither draining nor dead for
// DeadAfter), re-plan the controller's own voters (ctrlvoters.go), and
// drop drained members: placed nowhere, reporting no open replica (or
// down), and out of the controller group.
func (n *Node) ctrlPlan() {
	c := n.ctrl.Load()
	if c == nil || c.r.State() != raft.Leader {
		return
	}
	ctrlVoters, ctrlNonvoters, _ := n.ctrlConfig()
	_, err := n.ctrlPropose(func(m *Membership) error {
		var eligible []string
		for _, mb := range m.Nodes {
			if slices.Contains(m.Draining, mb.ID) || n.deadPastGrace(mb.ID) {
				continue
			}
			eligible = append(eligible, mb.ID)
		}
		m.Shards = rebalance(m.Shards, eligible, n.cfg.ReplicationFactor)
		n.planControllerVoters(m)
		for _, id := range slices.Clone(m.Draining) {
			placed := slices.ContainsFunc(m.Shards, func(r []string) bool { return slices.Contains(r, id) })
			hosted, up := n.health.hostedBy(id)
			inCtrl := slices.Contains(m.CtrlVoters, id) || slices.Contains(ctrlVoters, id) || slices.Contains(ctrlNonvoters, id)
			if placed || (up && hosted > 0) || inCtrl {
				continue
			}
			m.Nodes = slices.DeleteFunc(m.Nodes, func(x Member) bool { return x.ID == id })
			m.Draining = slices.DeleteFunc(m.Draining, func(x string) bool { return x == id })
			m.Removed = append(m.Removed, id)
			n.log.Info("controller: node removed", "id", id)
		}
		return nil
	})
	if err != nil && !errors.Is(err, errNotCtrlLeader) {
		n.log.Info("controller: plan", "err", err)
	}
}

// reconcileLoop converges this node towards its Membership every
// reconcileInterval (and, on the controller leader, re-plans).
func (n *Node) reconcileLoop() {
	t := time.NewTicker(reconcileInterval)
	defer t.Stop()
	var lastPlan, lastGossipTry time.Time
	for {
		select {
		case <-n.shutdownCh:
			return
		case <-t.C:
		}
		if time.Since(lastPlan) >= time.Second {
			lastPlan = time.Now()
			n.ctrlPlan()
			if n.gossip.Load() == nil && n.gossipWanted() && time.Since(lastGossipTry) >= gossipRetry {
				lastGossipTry = time.Now()
				if err := n.startGossip(); err != nil {
					n.log.Warn("gossip not started; polling every member instead (retried later)", "err", err)
				}
			}
		}
		if m := n.st.Load().members; m != nil {
			n.reconcileController(m)
		}
		n.reconcileLocal()
	}
}

// reconcileLocal opens replicas placed here, retires those no longer
// placed here, and, for shards led here, takes one configuration step.
func (n *Node) reconcileLocal() {
	st := n.st.Load()
	m := st.members
	if m == nil {
		return
	}
	for i := 0; i < len(m.Shards); i++ {
		select {
		case <-n.shutdownCh:
			return
		default:
		}
		want := m.Hosts(i, n.id)
		ls := st.local(i)
		if len(m.Shards[i]) == 0 {
			n.retireLocal(i, ls) // shards.go
			continue
		}
		switch {
		case want && ls == nil:
			nls, err := n.openShard(i)
			if err != nil {
				n.log.Error("opening placed replica", "shard", i, "err", err)
				continue
			}
			n.setShard(i, nls)
			n.log.Info("replica placed here opened", "shard", i)
		case ls == nil:
		case ls.s.TransferStuck():
			n.restartShard(i, ls)
		case want:
			if ls.s.IsLeader() {
				n.converge(shardView(i, ls), m.Shards[i], m)
			}
		default:
			if ls.s.IsLeader() {
				n.converge(shardView(i, ls), m.Shards[i], m)
				continue
			}
			if inConfig(ls.s.Raft(), n.id) && !n.leftBehind(i, ls) {
				continue
			}
			n.setShard(i, nil)
			err := errors.Join(ls.tr.Close(), ls.s.Close(),
				os.RemoveAll(filepath.Join(n.dir, "shards", strconv.Itoa(i))))
			n.log.Info("replica moved away closed", "shard", i, "err", err)
		}
	}
}

// restartShard closes the local replica ls of shard i and opens it again
// from its directory. It is the way out of a leadership transfer stuck in
// raft (fsm/transfer.go): the flag that makes the leader refuse every write
// lives in the raft instance. Requests meanwhile fail as on a replica being
// closed; the reopened replica rejoins as a follower.
func (n *Node) restartShard(i int, ls *localShard) {
	n.log.Warn("shard: a leadership transfer is stuck in raft and the shard refuses writes; restarting the replica", "shard", i)
	n.setShard(i, nil)
	err := errors.Join(ls.tr.Close(), ls.s.Close())
	nls, oerr := n.openShard(i)
	if oerr != nil {
		n.log.Error("shard: reopening the restarted replica", "shard", i, "close_err", err, "err", oerr)
		return // reconcileLocal opens it again next pass if it is still placed here
	}
	n.setShard(i, nls)
	n.log.Info("shard: replica restarted", "shard", i, "close_err", err)
}

// leftBehind reports whether ls, a replica of shard i no longer placed
// here that still finds itself in its configuration, has been removed by
// the shard's leader without learning it (a leader stops replicating to a
// server as soon as it appends the configuration that removes it). It has
// if no leader has contacted it for drainGrace while another member leads
// the shard. A replica the leader still counts as a voter hears from it
// every heartbeat, so it is kept until the leader has removed it: closing
// it earlier would leave the shard a voter short of its configuration (one
// more failure from no quorum), which on a loaded machine kept shards
// without a leader for many seconds while replicas were re-placed.
func (n *Node) leftBehind(i int, ls *localShard) bool {
	if time.Since(ls.s.Raft().LastContact()) < drainGrace {
		return false
	}
	l := n.health.leaderOf(i)
	return l != "" && l != n.id
}

// setShard publishes ls as the local replica of shard i.
func (n *Node) setShard(i int, ls *localShard) {
	n.updateState(func(old *state) *state {
		shards := slices.Clone(old.shards)
		if i >= len(shards) {
			// A shard added since the slice was made (shards.go).
			shards = append(shards, make([]*localShard, i+1-len(shards))...)
		}
		shards[i] = ls
		return &state{members: old.members, shards: shards}
	})
}

// isVoter reports whether id is a voter in r's latest configuration (false
// if it cannot be read).
func isVoter(r *raft.Raft, id string) bool {
	f := r.GetConfiguration()
	if f.Error() != nil {
		return false
	}
	return slices.ContainsFunc(f.Configuration().Servers, func(s raft.Server) bool {
		return string(s.ID) == id && s.Suffrage == raft.Voter
	})
}

// inConfig reports whether id is in r's latest configuration (true if it
// cannot be read).
func inConfig(r *raft.Raft, id string) bool {
	f := r.GetConfiguration()
	if f.Error() != nil {
		return true
	}
	return slices.ContainsFunc(f.Configuration().Servers, func(s raft.Server) bool { return string(s.ID) == id })
}

// groupView is one Raft group this node leads, as converge needs it.
type groupView struct {
	name string // for logs: "shard/3", "controller"
	r    *raft.Raft
	// acks is what the group's followers acknowledged to this leader:
	// their catch-up and liveness.
	acks     *replication
	transfer func(to raft.ServerID, addr raft.ServerAddress) raft.Future
}

// shardView is the groupView of the local replica ls of shard i.
func shardView(i int, ls *localShard) groupView {
	return groupView{name: ShardGroup(i), r: ls.s.Raft(), acks: ls.acks, transfer: ls.s.TransferLeadership}
}

// converge takes at most one Raft configuration step of g, which this node
// leads, towards the voter set want (addresses from m): add a missing
// server as non-voter; else promote a non-voter that has caught up (its
// acknowledged index within catchUpLag of this leader's last); else remove
// one surplus server, handing leadership to a live desired voter first if
// the surplus one is this node. A live surplus voter is kept while any
// remaining voter is down (removing it would leave the group one failure
// closer to no quorum: the drain waits, and a removal waiting for it says
// so), a down one while the remaining voters would have no live majority.
// So a group never has fewer voters than its desired set, and a drain
// never makes it less fault tolerant than it is.
func (n *Node) converge(g groupView, want []string, m *Membership) {
	f := g.r.GetConfiguration()
	if f.Error() != nil {
		return
	}
	servers := f.Configuration().Servers
	suff := make(map[string]raft.ServerSuffrage, len(servers))
	for _, s := range servers {
		suff[string(s.ID)] = s.Suffrage
	}
	const timeout = 5 * time.Second
	for _, id := range want {
		if _, ok := suff[id]; ok {
			continue
		}
		mb, ok := m.Node(id)
		if !ok {
			return
		}
		err := g.r.AddNonvoter(raft.ServerID(id), raft.ServerAddress(mb.RESPAddr()), 0, timeout).Error()
		n.log.Info("replica added as non-voter", "group", g.name, "id", id, "err", err)
		return
	}
	for _, id := range want {
		if suff[id] != raft.Nonvoter {
			continue
		}
		acked, ok := g.acked(id)
		if !ok || acked+catchUpLag < g.r.LastIndex() {
			return // still catching up
		}
		mb, _ := m.Node(id)
		err := g.r.AddVoter(raft.ServerID(id), raft.ServerAddress(mb.RESPAddr()), 0, timeout).Error()
		n.log.Info("replica promoted", "group", g.name, "id", id, "acked", acked, "err", err)
		return
	}
	live := g.live(n.id)
	for _, s := range servers {
		id := string(s.ID)
		if slices.Contains(want, id) {
			continue
		}
		if s.Suffrage == raft.Voter && !removable(servers, id, live) {
			continue
		}
		if id != n.id {
			err := g.r.RemoveServer(s.ID, 0, timeout).Error()
			n.log.Info("surplus replica removed", "group", g.name, "id", id, "err", err)
			return
		}
		for _, to := range want {
			if suff[to] == raft.Voter && live[to] {
				mb, _ := m.Node(to)
				err := g.transfer(raft.ServerID(to), raft.ServerAddress(mb.RESPAddr())).Error()
				n.log.Info("leadership handed over before leaving", "group", g.name, "to", to, "err", err)
				return
			}
		}
		return
	}
}

// removable reports whether voter id may leave the configuration servers
// given which servers are live: if it is live itself, only while every
// remaining voter is live too; if it is down, while the remaining voters
// keep a live majority.
func removable(servers []raft.Server, id string, live map[string]bool) bool {
	rem, liveRem := 0, 0
	for _, s := range servers {
		if s.Suffrage != raft.Voter || string(s.ID) == id {
			continue
		}
		rem++
		if live[string(s.ID)] {
			liveRem++
		}
	}
	if rem == 0 {
		return false
	}
	if live[id] {
		return liveRem == rem
	}
	return liveRem > rem/2
}

// acked returns the highest log index server id acknowledged to this
// leader in its current term.
func (g groupView) acked(id string) (uint64, bool) {
	term := g.r.CurrentTerm()
	g.acks.mu.Lock()
	defer g.acks.mu.Unlock()
	a, ok := g.acks.acked[raft.ServerID(id)]
	if !ok || g.acks.term != term {
		return 0, false
	}
	return a.index, true
}

// live returns the servers that acknowledged something (a heartbeat will
// do) to this leader within an election timeout, and self.
func (g groupView) live(self string) map[string]bool {
	out := map[string]bool{self: true}
	term, now := g.r.CurrentTerm(), time.Now()
	g.acks.mu.Lock()
	defer g.acks.mu.Unlock()
	if g.acks.term != term {
		return out
	}
	for id, a := range g.acks.acked {
		if now.Sub(a.at) <= g.acks.live {
			out[string(id)] = true
		}
	}
	return out
}

// ctrlJoinAny sends a join for mb to every member until the controller
// leader answers (tests).
func (n *Node) ctrlJoinAny(mb Member) (*Membership, error) {
	var last error = errNotCtrlLeader
	for _, x := range n.st.Load().members.Nodes {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		res, err := n.call(ctx, x.Bus, rpcRequest{Op: "join", From: mb})
		cancel()
		if err == nil {
			return res.Members, nil
		}
		last = err
		if err.Error() != errNotCtrlLeader.Error() {
			return nil, err
		}
	}
	return nil, last
}

// RequestRemove asks the cluster that the member at bus address bus
// belongs to to drain and drop node id, without a local Node (admin tools,
// system tests). Every member in that node's view is tried until the
// controller leader accepts. It returns once accepted; the drain proceeds
// asynchronously (watch CLUSTER NODES).
func RequestRemove(ctx context.Context, bus, id string, timeout time.Duration) error {
	return RequestRemoveTLS(ctx, bus, id, timeout, nil)
}

// RequestRemoveTLS is RequestRemove for a cluster whose bus is mutual TLS:
// bt (a certificate of the cluster CA) is presented on every connection.
// nil dials plaintext.
func RequestRemoveTLS(ctx context.Context, bus, id string, timeout time.Duration, bt *BusTLS) error {
	call := func(addr string, req rpcRequest) (rpcResponse, error) {
		d := net.Dialer{Timeout: timeout}
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return rpcResponse{}, err
		}
		if bt != nil {
			if c, err = bt.client(c, timeout); err != nil {
				return rpcResponse{}, err
			}
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(timeout))
		if err := writePreamble(c, RPCGroup); err != nil {
			return rpcResponse{}, err
		}
		if err := json.NewEncoder(c).Encode(&req); err != nil {
			return rpcResponse{}, err
		}
		var res rpcResponse
		if err := json.NewDecoder(c).Decode(&res); err != nil {
			return rpcResponse{}, err
		}
		if res.Err != "" {
			return res, errors.New(res.Err)
		}
		return res, nil
	}
	res, err := call(bus, rpcRequest{Op: "hello"})
	if err != nil {
		return err
	}
	if res.Members == nil {
		return errors.New("cluster: node at " + bus + " is not part of a formed cluster")
	}
	last := errNotCtrlLeader
	for _, mb := range res.Members.Nodes {
		_, err := call(mb.Bus, rpcRequest{Op: "remove", Target: id})
		if err == nil {
			return nil
		}
		last = err
	}
	return fmt.Errorf("cluster: remove %s: %w", id, last)
}
