package cluster

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/raft"

	"github.com/raftstream/raftstream/engine"
	"github.com/raftstream/raftstream/slots"
)

// The shard policy (DESIGN.md, "The shard policy"). A Raft group has a real
// cost per write (its own log entries, AppendEntries and heartbeats), so a
// cluster runs about K shards per node, K = 1 by default: a 3-node cluster
// has 3 shards, one led by each node. Formed without a shard count
// (FitHosts), it counts nodes that share a host of few CPUs as fewer
// (hostUnits): three nodes on one 2-CPU host have one shard. With the
// policy on (the default for a cluster formed by this version) the
// controller leader keeps that count as nodes join and leave, one step at a
// time, once the member set has been unchanged for policySettle:
//
//   - fewer live shards than round(K × members) (members not draining, or
//     their units with FitHosts; a cluster of one node keeps one shard,
//     standalone Redis semantics): add one, its preferred leader a member
//     of the host that prefers the fewest shards, and of those the member
//     that prefers the fewest (a node that just joined), so every node, or
//     host, leads a shard;
//   - more: retire one, the shard whose preferred leader is draining or
//     prefers the most shards (the lightest among those): its slots move
//     to the other shards, spread by weight, and once it owns none and
//     holds no key it is retired;
//   - otherwise (weighed every spreadInterval, or at once when a shard
//     owns no slot), when the heaviest shard outweighs the lightest by
//     more than a fifth of the mean, move runs of slots from the one to
//     the other (one donor gives once per step).
//
// A slot weighs 1 + its keys + its bytes/4 KiB (MEMORY USAGE's estimate),
// so an empty cluster spreads slots evenly and a loaded one by its data.
// Every step is an ordinary slot move or shard add/remove (migrate.go,
// shards.go), Raft-fenced like those an operator asks for; the policy only
// acts while none is in flight. It is part of the replicated Membership
// (Policy), so every controller leader applies the same one; RAFTSTREAM
// SHARD POLICY reads and changes it. An operator's own RAFTSTREAM SLOTS
// MOVE, SHARD ADD or SHARD REMOVE turns it off (operatorTakesOver): the
// policy would otherwise undo them. A Membership written before it
// existed has no policy: off.

// ShardPolicy is the automatic shard policy of a cluster.
type ShardPolicy struct {
	// Auto is whether the controller keeps the shard count and the slot
	// spread by itself.
	Auto bool `json:"auto"`
	// PerNode is the number of shards per member it keeps (K).
	PerNode float64 `json:"per_node"`
	// FitHosts counts members on one host as fewer when the host has too
	// few CPUs for a shard each (hostUnits): K shards per unit instead of
	// per member. On for a cluster formed without --shards or
	// --shards-per-node; RAFTSTREAM SHARD POLICY … PER-NODE turns it off.
	FitHosts bool `json:"fit_hosts,omitempty"`
}

// policyInterval is how often the controller leader considers a step;
// policySettle how long the member set must be unchanged first;
// spreadInterval how often it weighs the slots when every shard owns some.
const (
	policyInterval = time.Second
	policySettle   = 3 * time.Second
	spreadInterval = 15 * time.Second
)

// maxRunsPerStep bounds the runs of slots one shard gives in one step.
const maxRunsPerStep = 8

// slotByteUnit is the bytes that weigh as much as one key.
const slotByteUnit = 4096

// wantShards is the live shard count the policy keeps for members (those
// not draining).
func (p *ShardPolicy) wantShards(members []Member) int {
	units := len(members)
	if p.FitHosts {
		units = hostUnits(members)
	}
	return perNodeShards(p.PerNode, len(members), units)
}

// perNodeShards is round(k × units), at least 1, and 1 for a cluster of
// one node (standalone Redis semantics).
func perNodeShards(k float64, members, units int) int {
	if members <= 1 {
		return 1
	}
	return max(1, int(math.Round(k*float64(units))))
}

// cpusPerShard is how many of a host's CPUs one shard is given before the
// members on that host count as more than one unit.
//
// A shard is a Raft group: its leader loop, batcher and apply run one
// after the other on its leader, its followers' appends and applies on
// two more nodes, and each group has its own log writes, AppendEntries
// and heartbeats. Nodes packed onto one host with few CPUs gain no
// parallelism from more groups, only their cost: on the 2-CPU machine of
// cmd/ordersbench/PERFORMANCE.md (its cost curve) three nodes made 111k,
// 81k and 55k XADD/s at -P 16 with one, two and three shards (8.5, 12.6
// and 19.7 CPU µs per XADD).
const cpusPerShard = 2

// hostUnits is how many shards members (those not draining) can use:
// members with the same HostHash count together as min(their number,
// max(1, CPUs / cpusPerShard)), CPUs being the most any of them reports;
// a member with no host hash or no CPU count counts as one.
func hostUnits(members []Member) int {
	type host struct{ n, cpus int }
	hosts := map[string]*host{}
	units := 0
	for _, mb := range members {
		if mb.HostHash == "" || mb.CPUs <= 0 {
			units++
			continue
		}
		h := hosts[mb.HostHash]
		if h == nil {
			h = &host{}
			hosts[mb.HostHash] = h
		}
		h.n++
		h.cpus = max(h.cpus, mb.CPUs)
	}
	for _, h := range hosts {
		units += min(h.n, max(1, h.cpus/cpusPerShard))
	}
	return units
}

// ShardPolicy returns the cluster's shard policy as this node knows it
// (nil: none, off).
func (n *Node) ShardPolicy() *ShardPolicy {
	if st := n.st.Load(); st.members != nil && st.members.Policy != nil {
		p := *st.members.Policy
		return &p
	}
	return nil
}

// SetShardPolicy changes the cluster's shard policy through the controller:
// auto on or off, and K when perNode > 0.
func (n *Node) SetShardPolicy(ctx context.Context, auto bool, perNode float64) error {
	if perNode < 0 || perNode > 64 || math.IsNaN(perNode) {
		return fmt.Errorf("shards per node must be between 0 and 64")
	}
	on := "off"
	if auto {
		on = "auto"
	}
	_, err := n.toController(ctx, slotRPC{Op: "policy", Nodes: []string{on, strconv.FormatFloat(perNode, 'g', -1, 64)}})
	return err
}

// ctrlPolicy sets the policy on the controller leader.
func (n *Node) ctrlPolicy(req *slotRPC) error {
	if len(req.Nodes) != 2 {
		return errors.New("bad policy request")
	}
	k, err := strconv.ParseFloat(req.Nodes[1], 64)
	if err != nil {
		return err
	}
	_, err = n.ctrlPropose(func(m *Membership) error {
		p := ShardPolicy{PerNode: 1}
		if m.Policy != nil {
			p = *m.Policy
		}
		p.Auto = req.Nodes[0] == "auto"
		if k > 0 { // K per member, as asked: no longer fitted to the hosts
			p.PerNode, p.FitHosts = k, false
		}
		m.Policy = &p
		n.log.Info("controller: shard policy", "auto", p.Auto, "per_node", p.PerNode, "fit_hosts", p.FitHosts)
		return nil
	})
	return err
}

// operatorTakesOver turns the policy off in m when req is an operator's
// move, shard add or removal (not the policy's own): the two would undo
// each other's work. RAFTSTREAM SHARD POLICY AUTO turns it on again.
func (n *Node) operatorTakesOver(m *Membership, req *slotRPC) {
	if req.ByPolicy || m.Policy == nil || !m.Policy.Auto {
		return
	}
	p := *m.Policy
	p.Auto = false
	m.Policy = &p
	n.log.Info("controller: an operator's " + req.Op + " turns the shard policy off (RAFTSTREAM SHARD POLICY AUTO turns it on again)")
}

// policyLoop runs the policy on the controller leader.
func (n *Node) policyLoop() {
	t := time.NewTicker(policyInterval)
	defer t.Stop()
	var members, lastErr string
	var since, lastSpread time.Time
	for {
		select {
		case <-n.shutdownCh:
			return
		case <-t.C:
		}
		c := n.ctrl.Load()
		if c == nil || c.r.State() != raft.Leader {
			continue
		}
		m := c.fsm.get()
		if m == nil || m.Policy == nil || !m.Policy.Auto {
			continue
		}
		if key := memberKey(policyMembers(m)); key != members {
			members, since = key, time.Now()
		}
		if time.Since(since) < policySettle {
			continue
		}
		// Weighing the slots reads every key's size on every leader: the
		// spread is considered every spreadInterval, or at once when a
		// live shard owns no slot (one just added).
		spread := time.Since(lastSpread) >= spreadInterval || slotlessShard(m)
		if spread {
			lastSpread = time.Now()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := n.policyStep(ctx, m, spread)
		cancel()
		switch {
		case err == nil || errors.Is(err, errNotCtrlLeader):
			lastErr = ""
		case err.Error() != lastErr: // once per distinct reason
			lastErr = err.Error()
			n.log.Info("shard policy: step not taken (retried every second)", "err", err)
		}
	}
}

// slotlessShard reports whether a live shard of m owns no slot.
func slotlessShard(m *Membership) bool {
	sm, err := slots.FromRuns(m.slotTable().Runs)
	if err != nil {
		return false
	}
	for _, s := range liveShards(m) {
		if len(sm.RangesOf(s)) == 0 {
			return true
		}
	}
	return false
}

// policyMembers are the members the policy counts: those not draining.
func policyMembers(m *Membership) []Member {
	var out []Member
	for _, mb := range m.Nodes {
		if !slices.Contains(m.Draining, mb.ID) {
			out = append(out, mb)
		}
	}
	return out
}

// memberKey names a member set: its IDs in order.
func memberKey(ms []Member) string {
	ids := make([]string, len(ms))
	for i, mb := range ms {
		ids[i] = mb.ID
	}
	return strings.Join(ids, ",")
}

// liveShards are the shards that are not retired.
func liveShards(m *Membership) []int {
	var out []int
	for i, r := range m.Shards {
		if len(r) > 0 {
			out = append(out, i)
		}
	}
	return out
}

// policyStep takes at most one step of the policy (see the file comment);
// the spread only when spread is set.
func (n *Node) policyStep(ctx context.Context, m *Membership, spread bool) error {
	t := m.slotTable()
	if len(t.Moves) > 0 || len(t.Fresh) > 0 {
		return nil // one step at a time
	}
	live := liveShards(m)
	want := m.Policy.wantShards(policyMembers(m))
	switch {
	case len(live) < want:
		shard, err := n.addShard(ctx, slotRPC{Op: "add-shard", ByPolicy: true})
		if err != nil {
			return fmt.Errorf("adding a shard: %w", err)
		}
		n.log.Info("shard policy: shard added", "shard", shard, "shards", len(live)+1, "want", want)
		n.shardAdded(ctx, shard)
		return nil
	case len(live) > want:
		victim := retireCandidate(m, live)
		sm, err := slots.FromRuns(t.Runs)
		if err != nil {
			return err
		}
		if len(sm.RangesOf(victim)) == 0 {
			if err := n.removeShard(ctx, slotRPC{Op: "remove-shard", Remove: victim, ByPolicy: true}); err != nil {
				return fmt.Errorf("retiring shard %d: %w", victim, err)
			}
			n.log.Info("shard policy: shard retired", "shard", victim, "shards", len(live)-1, "want", want)
			return nil
		}
		w, err := n.slotWeights(ctx, live)
		if err != nil {
			return err
		}
		return n.recordMoves(planRetire(sm, w, live, victim))
	}
	if !spread {
		return nil
	}
	sm, err := slots.FromRuns(t.Runs)
	if err != nil {
		return err
	}
	w, err := n.slotWeights(ctx, live)
	if err != nil {
		return err
	}
	return n.recordMoves(planSpread(sm, w, live))
}

// shardAdded waits (bounded by ctx) until an added shard has a leader, then
// gives it the settings the others carry (Config.ShardAdded).
func (n *Node) shardAdded(ctx context.Context, shard int) {
	for {
		if id, _ := n.shardLeaderID(shard); id != "" {
			break
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
	if f := n.cfg.ShardAdded; f != nil {
		if err := f(shard); err != nil {
			n.log.Warn("shard policy: settings of an added shard", "shard", shard, "err", err)
		}
	}
}

// retireCandidate picks the live shard the policy retires: one whose
// preferred leader is draining, else one whose preferred leader prefers
// the most shards; the highest number among equals.
func retireCandidate(m *Membership, live []int) int {
	prefs := map[string]int{}
	for _, i := range live {
		prefs[m.Shards[i][0]]++
	}
	score := func(i int) int {
		if slices.Contains(m.Draining, m.Shards[i][0]) {
			return math.MaxInt
		}
		return prefs[m.Shards[i][0]]
	}
	best := live[0]
	for _, i := range live[1:] {
		if score(i) >= score(best) {
			best = i
		}
	}
	return best
}

// plannedMove is a slot range the policy moves to a shard.
type plannedMove struct {
	r  slots.Range
	to int
}

// recordMoves records the planned moves in one controller proposal.
func (n *Node) recordMoves(plan []plannedMove) error {
	if len(plan) == 0 {
		return nil
	}
	_, err := n.ctrlPropose(func(m *Membership) error {
		t := m.slotTable().clone()
		for _, p := range plan {
			mvs, err := planMoves(t, m, p.r, p.to)
			if err != nil {
				return err
			}
			t.Moves = append(t.Moves, mvs...)
		}
		m.Slots = t
		return nil
	})
	if err == nil {
		n.log.Info("shard policy: slots moving", "moves", fmt.Sprint(plan))
	}
	return err
}

func (p plannedMove) String() string {
	return fmt.Sprintf("%d-%d→%d", p.r.First, p.r.Last, p.to)
}

// slotWeights asks the leader of every live shard what its slots hold and
// returns each slot's weight (1 + keys + bytes/slotByteUnit).
func (n *Node) slotWeights(ctx context.Context, live []int) ([]float64, error) {
	w := make([]float64, slots.Count)
	for i := range w {
		w[i] = 1
	}
	for _, shard := range live {
		us, err := n.shardUsage(ctx, shard)
		if err != nil {
			return nil, err
		}
		for _, u := range us {
			w[u.Slot] += float64(u.Keys) + float64(u.Bytes)/slotByteUnit
		}
	}
	return w, nil
}

// shardUsage is engine.SlotsUsage of shard, read on its leader (here or by
// RPC).
func (n *Node) shardUsage(ctx context.Context, shard int) ([]engine.SlotUsage, error) {
	if ls := n.shard(shard); ls != nil && ls.s.IsLeader() {
		var out []engine.SlotUsage
		err := ls.s.Read(ctx, func(e *engine.Engine) { out = e.SlotsUsage() })
		return out, err
	}
	st := n.st.Load()
	id := n.health.leaderOf(shard)
	m, ok := st.members.Node(id)
	if !ok {
		return nil, fmt.Errorf("shard %d: leader unknown, retry", shard)
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	res, err := n.call(cctx, m.Bus, rpcRequest{Op: "slots", From: n.self, Slots: &slotRPC{Op: "usage", Shard: shard}})
	if err != nil {
		return nil, err
	}
	return parseUsage(res.SlotReply)
}

// usageStrings encodes SlotsUsage for the slots RPC: "slot keys bytes".
func usageStrings(us []engine.SlotUsage) []string {
	out := make([]string, len(us))
	for i, u := range us {
		out[i] = fmt.Sprintf("%d %d %d", u.Slot, u.Keys, u.Bytes)
	}
	return out
}

func parseUsage(ss []string) ([]engine.SlotUsage, error) {
	out := make([]engine.SlotUsage, 0, len(ss))
	for _, s := range ss {
		var u engine.SlotUsage
		if _, err := fmt.Sscanf(s, "%d %d %d", &u.Slot, &u.Keys, &u.Bytes); err != nil || u.Slot < 0 || u.Slot >= slots.Count {
			return nil, fmt.Errorf("cluster: usage: bad entry %q", s)
		}
		out = append(out, u)
	}
	return out, nil
}

// shardWeights sums w over each live shard's slots.
func shardWeights(sm *slots.Map, w []float64, live []int) (map[int]float64, float64) {
	W := make(map[int]float64, len(live))
	for _, s := range live {
		W[s] = 0
	}
	total := 0.0
	for s := range slots.Count {
		if _, ok := W[sm.Shard(s)]; ok {
			W[sm.Shard(s)] += w[s]
			total += w[s]
		}
	}
	return W, total
}

// lightest is the shard of W with the least weight, skipping skip; the
// lowest number among equals.
func lightest(W map[int]float64, live []int, skip int) int {
	best := -1
	for _, s := range live {
		if s != skip && (best < 0 || W[s] < W[best]) {
			best = s
		}
	}
	return best
}

// planRetire spreads every slot of victim over the other live shards,
// each run to the shard then lightest, in runs of about what brings that
// shard to the mean.
func planRetire(sm *slots.Map, w []float64, live []int, victim int) []plannedMove {
	W, total := shardWeights(sm, w, live)
	mean := total / float64(len(live)-1)
	// No run weighs less than a fair share of the victim's weight, so
	// rounding never ends in a trail of one-slot moves.
	floor := W[victim] / float64(len(live)-1)
	var plan []plannedMove
	for _, rg := range sm.RangesOf(victim) {
		s := rg.First
		for s <= rg.Last {
			to := lightest(W, live, victim)
			need := max(mean-W[to], floor)
			first, acc := s, 0.0
			for s <= rg.Last && (acc == 0 || acc+w[s] <= need) {
				acc += w[s]
				s++
			}
			W[to] += acc
			plan = append(plan, plannedMove{r: slots.Range{First: first, Last: s - 1}, to: to})
		}
	}
	return plan
}

// planSpread moves runs of slots from the heaviest shards to the lightest
// while the two differ by more than a fifth of the mean (so slowly growing
// data does not keep slots moving) and the move narrows the gap; a shard
// gives at most one run per step and does not both give and take.
func planSpread(sm *slots.Map, w []float64, live []int) []plannedMove {
	if len(live) < 2 {
		return nil
	}
	W, total := shardWeights(sm, w, live)
	mean := total / float64(len(live))
	owner := make([]int, slots.Count)
	for s := range owner {
		owner[s] = sm.Shard(s)
	}
	gave, took := map[int]bool{}, map[int]bool{}
	var plan []plannedMove
	for range live {
		d, r := -1, -1
		for _, s := range live {
			if !gave[s] && !took[s] && (d < 0 || W[s] > W[d]) {
				d = s
			}
			if !gave[s] && (r < 0 || W[s] < W[r]) {
				r = s
			}
		}
		if d < 0 || d == r || W[d]-W[r] <= mean/5 {
			break
		}
		gap := W[d] - W[r]
		need := min(W[d]-mean, mean-W[r])
		if need <= 0 {
			break
		}
		// Runs of d's slots, from the top down, skipping slots heavier
		// than what is left to give, until need is met (at most
		// maxRunsPerStep runs); if every slot of d is heavier than need,
		// its lightest one that still narrows the gap.
		var runs []slots.Range
		acc := 0.0
		for s := slots.Count - 1; s >= 0 && acc < need && len(runs) <= maxRunsPerStep; s-- {
			if owner[s] != d || acc+w[s] > need {
				continue
			}
			if k := len(runs) - 1; k >= 0 && runs[k].First == s+1 {
				runs[k].First = s
			} else {
				runs = append(runs, slots.Range{First: s, Last: s})
			}
			acc += w[s]
		}
		if len(runs) > maxRunsPerStep {
			last := runs[maxRunsPerStep]
			for s := last.First; s <= last.Last; s++ {
				acc -= w[s]
			}
			runs = runs[:maxRunsPerStep]
		}
		if len(runs) == 0 {
			top := -1
			for s := range owner {
				if owner[s] == d && w[s] < gap && (top < 0 || w[s] < w[top]) {
					top = s
				}
			}
			if top < 0 {
				break
			}
			runs, acc = []slots.Range{{First: top, Last: top}}, w[top]
		}
		for _, rg := range runs {
			for s := rg.First; s <= rg.Last; s++ {
				owner[s] = r
			}
			plan = append(plan, plannedMove{r: rg, to: r})
		}
		W[d] -= acc
		W[r] += acc
		gave[d], took[r] = true, true
	}
	return plan
}
