package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/hashicorp/raft"

	"github.com/raftstream/raftstream/engine"
	"github.com/raftstream/raftstream/slots"
)

// Shards come and go (DESIGN.md, "Adding and retiring shards"). A shard is a
// Raft group with a number for life: RAFTSTREAM SHARD ADD appends one to
// the Membership, placed on the nodes given or on the least loaded ones,
// and records its initial voters (SlotTable.Fresh); those nodes open the
// replica (reconcileLocal) and bootstrap it with exactly that
// configuration, as formation does for the first shards. The controller
// leader forgets the record once the shard has a leader, so no replica
// opened later (a rebalance) ever bootstraps. The new shard owns no slots
// until moves give it some. RAFTSTREAM SHARD REMOVE retires a shard that
// owns no slot, takes part in no move and holds no key: its replica list
// becomes empty (the number is never reused), and every node closes and
// deletes its replica.

// FreshShard is a shard added and not yet led: its initial voters.
type FreshShard struct {
	Shard   int      `json:"shard"`
	Servers []string `json:"servers"`
}

// AddShard asks the controller to add a shard, on nodes (member IDs) or,
// when none are given, on the least loaded members; it returns the new
// shard's number once this node has adopted it.
func (n *Node) AddShard(ctx context.Context, nodes []string) (int, error) {
	return n.addShard(ctx, slotRPC{Op: "add-shard", Nodes: nodes})
}

func (n *Node) addShard(ctx context.Context, req slotRPC) (int, error) {
	out, err := n.toController(ctx, req)
	if err != nil {
		return -1, err
	}
	if len(out) != 1 {
		return -1, fmt.Errorf("cluster: add-shard: reply %v", out)
	}
	shard, err := strconv.Atoi(out[0])
	if err != nil {
		return -1, err
	}
	for n.NumShards() <= shard {
		select {
		case <-ctx.Done():
			return shard, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return shard, nil
}

// RemoveShard retires shard, which must own no slot, take part in no move
// and hold no key.
func (n *Node) RemoveShard(ctx context.Context, shard int) error {
	return n.removeShard(ctx, slotRPC{Op: "remove-shard", Remove: shard})
}

func (n *Node) removeShard(ctx context.Context, req slotRPC) error {
	shard := req.Remove
	keys, err := n.shardKeys(ctx, shard)
	if err != nil {
		return err
	}
	if keys > 0 {
		return fmt.Errorf("shard %d holds %d keys", shard, keys)
	}
	_, err = n.toController(ctx, req)
	return err
}

// shardKeys counts shard's keys on its leader (here or by RPC).
func (n *Node) shardKeys(ctx context.Context, shard int) (int, error) {
	if ls := n.shard(shard); ls != nil && ls.s.IsLeader() {
		keys := 0
		err := ls.s.Read(ctx, func(e *engine.Engine) { keys = int(e.Exec(0, [][]byte{[]byte("DBSIZE")}).(engine.Integer)) })
		return keys, err
	}
	st := n.st.Load()
	if st.members == nil || shard < 0 || shard >= len(st.members.Shards) || len(st.members.Shards[shard]) == 0 {
		return 0, fmt.Errorf("no shard %d", shard)
	}
	id := n.health.leaderOf(shard)
	m, ok := st.members.Node(id)
	if !ok {
		return 0, fmt.Errorf("shard %d: leader unknown, retry", shard)
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	res, err := n.call(cctx, m.Bus, rpcRequest{Op: "slots", From: n.self, Slots: &slotRPC{Op: "count", Shard: shard}})
	if err != nil {
		return 0, err
	}
	if len(res.SlotReply) != 1 {
		return 0, errors.New("cluster: count: bad reply")
	}
	return strconv.Atoi(res.SlotReply[0])
}

// ctrlShards handles the shard requests of the slots RPC on the controller
// leader (add-shard, remove-shard), and the key count a shard's leader
// answers (count).
func (n *Node) ctrlShards(req *slotRPC) ([]string, error) {
	switch req.Op {
	case "count":
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ls := n.shard(req.Shard)
		if ls == nil || !ls.s.IsLeader() {
			return nil, fmt.Errorf("shard %d: not its leader", req.Shard)
		}
		k, err := n.shardKeys(ctx, req.Shard)
		return []string{strconv.Itoa(k)}, err
	case "add-shard":
		var added int
		_, err := n.ctrlPropose(func(m *Membership) error {
			reps, err := n.placeNewShard(m, req.Nodes)
			if err != nil {
				return err
			}
			t := m.slotTable().clone()
			added = len(m.Shards)
			m.Shards = append(m.Shards, reps)
			t.Fresh = append(t.Fresh, FreshShard{Shard: added, Servers: slices.Clone(reps)})
			m.Slots = t
			n.operatorTakesOver(m, req)
			n.log.Info("controller: shard added", "shard", added, "replicas", reps)
			return nil
		})
		if err != nil {
			return nil, err
		}
		return []string{strconv.Itoa(added)}, nil
	case "remove-shard":
		_, err := n.ctrlPropose(func(m *Membership) error {
			s := req.Remove
			if s < 0 || s >= len(m.Shards) || len(m.Shards[s]) == 0 {
				return fmt.Errorf("no shard %d", s)
			}
			t := m.slotTable().clone()
			sm, err := slots.FromRuns(t.Runs)
			if err != nil {
				return err
			}
			if rs := sm.RangesOf(s); len(rs) > 0 {
				return fmt.Errorf("shard %d owns slots %d-%d (and %d more ranges): move them away first", s, rs[0].First, rs[0].Last, len(rs)-1)
			}
			for _, mv := range t.Moves {
				if mv.From == s || mv.To == s {
					return fmt.Errorf("shard %d takes part in move %d", s, mv.ID)
				}
			}
			live := 0
			for _, r := range m.Shards {
				if len(r) > 0 {
					live++
				}
			}
			if live <= 1 {
				return errors.New("cannot remove the last shard")
			}
			m.Shards[s] = nil
			t.Fresh = slices.DeleteFunc(t.Fresh, func(f FreshShard) bool { return f.Shard == s })
			m.Slots = t
			n.operatorTakesOver(m, req)
			n.log.Info("controller: shard retired", "shard", s)
			return nil
		})
		return nil, err
	case "policy":
		return nil, n.ctrlPolicy(req)
	}
	return nil, fmt.Errorf("unknown slots op %q", req.Op)
}

// placeNewShard picks a new shard's replicas: the nodes given (members,
// not draining; the first is the preferred leader), or, first, a member of
// the host whose members prefer the fewest live shards, and of those the
// member preferring the fewest (a node that just joined: so every node,
// and every host, comes to lead a shard), then the replication factor's
// worth with the fewest replicas; fewer replicas, then the lower ID, among
// equals.
func (n *Node) placeNewShard(m *Membership, nodes []string) ([]string, error) {
	if len(nodes) > 0 {
		seen := map[string]bool{}
		for _, id := range nodes {
			if _, ok := m.Node(id); !ok || slices.Contains(m.Draining, id) {
				return nil, fmt.Errorf("%s is not a member that can hold replicas", id)
			}
			if seen[id] {
				return nil, fmt.Errorf("%s given twice", id)
			}
			seen[id] = true
		}
		return slices.Clone(nodes), nil
	}
	reps, prefs := map[string]int{}, map[string]int{}
	var eligible []string
	for _, mb := range m.Nodes {
		if !slices.Contains(m.Draining, mb.ID) {
			eligible = append(eligible, mb.ID)
		}
	}
	for _, r := range m.Shards {
		for k, id := range r {
			reps[id]++
			if k == 0 {
				prefs[id]++
			}
		}
	}
	if len(eligible) == 0 {
		return nil, errors.New("no member can hold replicas")
	}
	// hostPrefs counts the shards preferring a member of each host (a
	// member without a host hash is a host of its own).
	hostOf := func(id string) string {
		if mb, _ := m.Node(id); mb.HostHash != "" {
			return "h:" + mb.HostHash
		}
		return "n:" + id
	}
	hostPrefs := map[string]int{}
	for id, k := range prefs {
		hostPrefs[hostOf(id)] += k
	}
	slices.Sort(eligible)
	slices.SortStableFunc(eligible, func(a, b string) int { return reps[a] - reps[b] })
	lead := slices.Clone(eligible)
	slices.SortStableFunc(lead, func(a, b string) int {
		if d := hostPrefs[hostOf(a)] - hostPrefs[hostOf(b)]; d != 0 {
			return d
		}
		return prefs[a] - prefs[b]
	})
	out := []string{lead[0]}
	for _, id := range eligible {
		if len(out) < n.cfg.ReplicationFactor && id != lead[0] {
			out = append(out, id)
		}
	}
	return out, nil
}

// freshShards bootstraps the added shards this node is an initial voter
// of, once their replica is open here, and, on the controller leader,
// forgets the ones that have a leader.
func (n *Node) freshShards() {
	st := n.st.Load()
	if st.members == nil || st.members.Slots == nil || len(st.members.Slots.Fresh) == 0 {
		return
	}
	var led []int
	for _, f := range st.members.Slots.Fresh {
		if ls := st.local(f.Shard); ls != nil && slices.Contains(f.Servers, n.id) {
			var servers []raft.Server
			for _, id := range f.Servers {
				if mb, ok := st.members.Node(id); ok {
					servers = append(servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(id), Address: raft.ServerAddress(mb.RESPAddr())})
				}
			}
			if err := ls.s.BootstrapIfEmpty(servers); err != nil {
				n.log.Warn("bootstrapping an added shard", "shard", f.Shard, "err", err)
			}
		}
		if id, _ := n.shardLeaderID(f.Shard); id != "" {
			led = append(led, f.Shard)
		}
	}
	if len(led) == 0 {
		return
	}
	if c := n.ctrl.Load(); c == nil || c.r.State() != raft.Leader {
		return
	}
	_, err := n.ctrlPropose(func(m *Membership) error {
		if m.Slots == nil {
			return nil
		}
		t := m.Slots.clone()
		t.Fresh = slices.DeleteFunc(t.Fresh, func(f FreshShard) bool { return slices.Contains(led, f.Shard) })
		m.Slots = t
		return nil
	})
	if err != nil && !errors.Is(err, errNotCtrlLeader) {
		n.log.Info("controller: forgetting added shards", "err", err)
	}
}

// shardLeaderID is the leader of shard as this node knows it.
func (n *Node) shardLeaderID(shard int) (string, bool) {
	if ls := n.shard(shard); ls != nil {
		if id, _ := ls.s.Leader(); id != "" {
			return id, true
		}
	}
	id := n.health.leaderOf(shard)
	return id, id != ""
}

// retireLocal closes and deletes this node's replica of a retired shard.
func (n *Node) retireLocal(i int, ls *localShard) {
	if ls == nil {
		return
	}
	n.setShard(i, nil)
	err := errors.Join(ls.tr.Close(), ls.s.Close(), os.RemoveAll(filepath.Join(n.dir, "shards", strconv.Itoa(i))))
	n.log.Info("replica of a retired shard closed", "shard", i, "err", err)
}
