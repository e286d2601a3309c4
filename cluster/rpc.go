package cluster

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"
)

// The rpc group carries small request/response exchanges between nodes:
// one JSON request line, one JSON response line, then the connection is
// closed. Ops:
//
//	hello   formation: "here I am, whom do you know?"; the reply carries the
//	        responder, the nodes it knows, its shard count and, once formed,
//	        its Membership.
//	status  health: the shards the responder currently leads (and in which
//	        term), the applied index of each replica it hosts, and the
//	        newest controller Membership it knows (its controller
//	        replica's, else the one it adopted) when newer than the
//	        requester's Ctrl. Sent to members gossip does not cover
//	        (health.go) and to fetch a newer Membership a member gossips.
//	join    a new node asks the controller leader to add it (reconfig.go).
//	remove  drain and drop node Target (controller leader only).
//	confs   the Raft configuration of every group the responder leads, as
//	        its leader sees it (remove.go: is a removal whole?), and the
//	        controller's Membership when it leads the controller.
//	slots   slot moves and shards (migrate.go, shards.go): a command for a
//	        shard's leader, a slot-table change for the controller
//	        leader, or a move driver's status.
type rpcRequest struct {
	Op     string   `json:"op"`
	From   Member   `json:"from"`
	Known  []Member `json:"known,omitempty"`
	Ctrl   uint64   `json:"ctrl,omitempty"`
	Target string   `json:"target,omitempty"`
	Slots  *slotRPC `json:"slots,omitempty"`
}

type rpcResponse struct {
	Self   Member   `json:"self"`
	Known  []Member `json:"known,omitempty"`
	Shards int      `json:"shards"`
	// Fixed (hello): the responder's shard count was given (--shards or
	// --shards-per-node), not fitted to the hosts at formation.
	Fixed bool `json:"fixed,omitempty"`
	// Adopted (hello): the responder, still forming, took the shard count
	// of a formed cluster it is joining; its count is that cluster's.
	Adopted bool        `json:"adopted,omitempty"`
	Members *Membership `json:"members,omitempty"`
	Leads   []int       `json:"leads,omitempty"`
	// LeadTerms[i] is the term in which the responder leads Leads[i].
	LeadTerms []uint64       `json:"lead_terms,omitempty"`
	Applied   map[int]uint64 `json:"applied,omitempty"`
	Confs     []groupConf    `json:"confs,omitempty"`
	Err       string         `json:"err,omitempty"`
	// SlotReply and SlotStatus answer the slots op.
	SlotReply  []string     `json:"slot_reply,omitempty"`
	SlotStatus []MoveStatus `json:"slot_status,omitempty"`
}

// discovery is the set of nodes this node has heard of before formation.
type discovery struct {
	mu    sync.Mutex
	known map[string]Member
}

func (d *discovery) merge(ms ...Member) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, m := range ms {
		if validNodeID(m.ID) {
			d.known[m.ID] = m
		}
	}
}

// list returns the known nodes sorted by ID.
func (d *discovery) list() []Member {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]Member, 0, len(d.known))
	for _, m := range d.known {
		out = append(out, m)
	}
	slices.SortFunc(out, byID)
	return out
}

// startRPC serves the rpc group until the mux closes.
func (n *Node) startRPC() {
	n.disc = &discovery{known: map[string]Member{n.id: n.self}}
	l := n.mux.Layer(RPCGroup)
	n.goFunc(func() {
		<-n.shutdownCh
		l.Close()
	})
	n.goFunc(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			n.goFunc(func() { n.serveRPC(c) })
		}
	})
}

func (n *Node) serveRPC(c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(n.cfg.DialTimeout))
	var req rpcRequest
	if err := json.NewDecoder(bufio.NewReader(c)).Decode(&req); err != nil {
		return
	}
	res := rpcResponse{Self: n.self, Shards: n.formedShards()}
	if req.Op == "hello" || req.Op == "status" {
		n.observeMember(req.From)
	}
	switch req.Op {
	case "hello":
		n.disc.merge(req.From)
		n.disc.merge(req.Known...)
		res.Known = n.disc.list()
		n.metaMu.Lock()
		// Read together: formation may fit the shard count as it sets
		// the Membership (setMembers).
		res.Members, res.Shards = n.meta.Members, n.formedShards()
		res.Adopted = n.adopted && res.Members == nil
		n.metaMu.Unlock()
		res.Fixed = !n.cfg.fitsHosts()
	case "status":
		st := n.st.Load()
		res.Applied = make(map[int]uint64)
		for i, ls := range st.shards {
			if ls == nil {
				continue
			}
			if ls.s.IsLeader() {
				res.Leads = append(res.Leads, i)
				res.LeadTerms = append(res.LeadTerms, ls.s.Raft().CurrentTerm())
			}
			res.Applied[i] = ls.s.Raft().AppliedIndex()
		}
		res.Members = n.newestMembership(req.Ctrl)
	case "join":
		m, err := n.ctrlJoin(req.From)
		if err != nil {
			res.Err = err.Error()
		}
		res.Members = m
	case "remove":
		if err := n.ctrlRemove(req.Target); err != nil {
			res.Err = err.Error()
		}
	case "confs":
		res.Confs, res.Members = n.ledConfs()
	case "slots":
		if req.Slots == nil {
			res.Err = "slots: no request"
			break
		}
		n.serveSlotRPC(req.Slots, &res)
	default:
		res.Err = "unknown op " + strconv.Quote(req.Op)
	}
	_ = json.NewEncoder(c).Encode(&res)
}

// newestMembership is the newest controller Membership this node knows,
// in the controller's form (Epoch = the controller's, Ctrl 0), if its
// Epoch is above after; nil otherwise. A controller replica's is newest;
// a node without one answers with the one it adopted.
func (n *Node) newestMembership(after uint64) *Membership {
	if c := n.ctrl.Load(); c != nil {
		if m := c.fsm.get(); m != nil && m.Epoch > after {
			return m
		}
	}
	n.metaMu.Lock()
	cur := n.meta.Members
	n.metaMu.Unlock()
	if cur == nil || cur.Ctrl <= after {
		return nil
	}
	m := cur.clone()
	m.Epoch, m.Ctrl = cur.Ctrl, 0
	return m
}

// call sends one request to the node whose bus is at addr.
func (n *Node) call(ctx context.Context, addr string, req rpcRequest) (rpcResponse, error) {
	n.bus.rpcReqs.Add(1)
	timeout := n.cfg.DialTimeout
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < timeout {
		timeout = max(time.Until(dl), time.Millisecond)
	}
	c, err := n.mux.Dial(addr, RPCGroup, timeout)
	if err != nil {
		return rpcResponse{}, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	if err := json.NewEncoder(c).Encode(&req); err != nil {
		return rpcResponse{}, err
	}
	var res rpcResponse
	if err := json.NewDecoder(bufio.NewReader(c)).Decode(&res); err != nil {
		return rpcResponse{}, err
	}
	if res.Err != "" {
		return res, errors.New(res.Err)
	}
	return res, nil
}

// form discovers the other BootstrapExpect-1 nodes through Join (and the
// nodes they know), then returns the Membership every one of them computes
// from the same sorted node set. If a reachable node already formed a
// cluster that includes this node, its Membership is adopted.
func (n *Node) form(ctx context.Context) (*Membership, error) {
	expect := n.cfg.BootstrapExpect
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for attempt := 0; ; attempt++ {
		addrs := slices.Clone(n.cfg.Join)
		for _, m := range n.disc.list() {
			addrs = append(addrs, m.Bus)
		}
		slices.Sort(addrs)
		addrs = slices.Compact(addrs)
		// A certificate refused on every peer does not heal by retrying:
		// the node was given the wrong certificate or CA. Stop with that
		// error instead of waiting forever (one bad address among good
		// ones is only logged: it may be the misconfigured node).
		peers, certRefused := 0, 0
		var certErr error
		for _, a := range addrs {
			if a == n.self.Bus {
				continue
			}
			peers++
			cctx, cancel := context.WithTimeout(ctx, time.Second)
			res, err := n.call(cctx, a, rpcRequest{Op: "hello", From: n.self, Known: n.disc.list()})
			cancel()
			if err != nil && IsCertError(err) {
				certRefused++
				certErr = fmt.Errorf("cluster: joining through %s: %w", a, asCertError(err))
				if attempt%50 == 0 {
					n.log.Warn("formation: cluster bus certificate refused", "addr", a, "err", err)
				}
				continue
			}
			if err != nil {
				if attempt%50 == 0 {
					n.log.Info("formation: peer not reachable yet", "addr", a, "err", err)
				}
				continue
			}
			if res.Shards != n.formedShards() && res.Members != nil && n.cfg.Shards == 0 {
				// A new node joining a formed cluster with no shard
				// count of its own takes the cluster's.
				n.metaMu.Lock()
				n.nShards.Store(int64(res.Shards))
				n.meta.Shards = res.Shards
				n.adopted = true
				n.metaMu.Unlock()
			}
			if res.Shards != n.formedShards() && res.Adopted {
				// The peer took a formed cluster's count (above) and is
				// joining it: it answers with that cluster's Membership
				// once it has it. Learn who it knows meanwhile.
				n.disc.merge(res.Self)
				n.disc.merge(res.Known...)
				continue
			}
			if res.Shards != n.formedShards() {
				return nil, fmt.Errorf("cluster: node %s at %s has %d shards, this node %d", res.Self.ID, a, res.Shards, n.formedShards())
			}
			if fixed := !n.cfg.fitsHosts(); res.Members == nil && res.Fixed != fixed {
				// The two would form different shard counts.
				return nil, fmt.Errorf("cluster: node %s at %s %s, this node %s: give every node the same --shards and --shards-per-node",
					res.Self.ID, a, shardCountSource(res.Fixed), shardCountSource(fixed))
			}
			if res.Members != nil {
				if _, ok := res.Members.Node(n.id); ok {
					if err := res.Members.check(n.formedShards()); err != nil {
						return nil, fmt.Errorf("cluster: membership from %s: %w", a, err)
					}
					return res.Members, nil
				}
				return n.join(ctx, res.Members)
			}
			n.disc.merge(res.Self)
			n.disc.merge(res.Known...)
		}
		if peers > 0 && certRefused == peers && attempt >= 2 {
			return nil, certErr
		}
		known := n.disc.list()
		switch {
		case len(known) == expect && expect > 1:
			// expect 1 with Join: a node joining a running cluster never
			// forms one alone; it waits for a formed peer (join above).
			n.log.Info("formation: node set complete", "nodes", len(known))
			shards := n.formedShards()
			if n.cfg.fitsHosts() {
				// Every forming node counts the same known set, so they
				// all fit alike; setMembers makes it the formed count.
				if want := n.cfg.initialPolicy().wantShards(known); want < shards {
					n.log.Info("formation: shards fitted to the hosts' CPUs", "shards", want, "nodes", len(known))
					shards, n.fitShards = want, want
				}
			}
			m := place(known, shards, n.cfg.ReplicationFactor)
			m.Policy = n.cfg.initialPolicy()
			if err := m.check(shards); err != nil {
				return nil, fmt.Errorf("cluster: formation: %w", err)
			}
			return m, nil
		case len(known) > expect && expect > 1:
			return nil, fmt.Errorf("cluster: discovered %d nodes but BootstrapExpect is %d", len(known), expect)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("cluster: formation with %d of %d nodes: %w", len(known), expect, ctx.Err())
		case <-n.shutdownCh:
			return nil, errors.New("cluster: node closed during formation")
		case <-tick.C:
		}
	}
}

// shardCountSource says where a forming node's shard count comes from.
func shardCountSource(fixed bool) string {
	if fixed {
		return "was given its shard count"
	}
	return "fits its shard count to the hosts"
}

func splitHostPort(a string) (string, int, error) {
	h, p, err := net.SplitHostPort(a)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(p)
	return h, port, err
}
