package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/raft"
)

// Removing a node (RAFTSTREAM REMOVE-NODE, raftstream remove-node) answers
// OK only once the cluster is whole without it, as the Raft groups
// themselves say, not as the desired topology says:
//
//   - the controller's Membership no longer lists it (it is in Removed),
//     and the controller group's committed configuration no longer
//     includes it;
//   - every shard that had it as a replica (placed there when the removal
//     was asked, or still in the shard's configuration) has, in the
//     committed configuration its leader reports, no trace of it and a
//     full set of voters — the replication factor, or every remaining node
//     when there are fewer — each of them a member that acknowledged its
//     leader within an election timeout (live).
//
// It refuses at once, without starting a drain, when it cannot be made
// whole: it is the last node, or fewer live nodes would remain than a full
// replica set needs (a down member counts as a node but cannot hold a
// live replica: bring it back or remove it first). If the cluster is not
// whole by the caller's deadline, the error names what is missing. The
// drain itself goes on in the background (RemoveNode again waits for it).

// groupConf is a Raft group's configuration as its leader sees it.
type groupConf struct {
	// Shard is the shard number, -1 for the controller group.
	Shard     int      `json:"shard"`
	Term      uint64   `json:"term"`
	Committed bool     `json:"committed"`
	Voters    []string `json:"voters"`
	Nonvoters []string `json:"nonvoters,omitempty"`
	// Live lists the servers that acknowledged the leader within an
	// election timeout, the leader included.
	Live []string `json:"live"`
}

// ledConfs returns the configuration of every group this node leads and,
// if it leads the controller, the controller's Membership.
func (n *Node) ledConfs() ([]groupConf, *Membership) {
	var out []groupConf
	for i, ls := range n.st.Load().shards {
		if ls != nil && ls.s.IsLeader() {
			if gc, ok := confOf(i, shardView(i, ls), n.id); ok {
				out = append(out, gc)
			}
		}
	}
	var members *Membership
	if c := n.ctrl.Load(); c != nil && c.r.State() == raft.Leader {
		if gc, ok := confOf(-1, groupView{r: c.r, acks: c.acks}, n.id); ok {
			out = append(out, gc)
			members = c.fsm.get()
		}
	}
	return out, members
}

// confOf reads g's latest configuration; it is committed when its index is
// at or below the commit index (this node leads g).
func confOf(shard int, g groupView, self string) (groupConf, bool) {
	term := g.r.CurrentTerm()
	f := g.r.GetConfiguration()
	if f.Error() != nil || g.r.State() != raft.Leader {
		return groupConf{}, false
	}
	gc := groupConf{Shard: shard, Term: term, Committed: f.Index() <= g.r.CommitIndex()}
	for _, s := range f.Configuration().Servers {
		if s.Suffrage == raft.Voter {
			gc.Voters = append(gc.Voters, string(s.ID))
		} else {
			gc.Nonvoters = append(gc.Nonvoters, string(s.ID))
		}
	}
	for id := range g.live(self) {
		gc.Live = append(gc.Live, id)
	}
	slices.Sort(gc.Live)
	return gc, true
}

// RemoveNode drains member id (its replicas move to other nodes, its
// leaderships are handed over), drops it from the cluster and the
// controller group, and returns once the cluster is whole without it (see
// above) or with the reason it is not when ctx ends. The request goes to
// whichever member leads the controller. The removed node's ID is never
// accepted again.
func (n *Node) RemoveNode(ctx context.Context, id string) error {
	st := n.st.Load()
	if st.members == nil {
		return errors.New("cluster: not formed")
	}
	_, member := st.members.Node(id)
	if !member && !slices.Contains(st.members.Removed, id) {
		return fmt.Errorf("cluster: no member %s", id)
	}
	var affected []int
	if member {
		if err := n.removalPossible(ctx, st.members, id); err != nil {
			return err
		}
		for i, r := range st.members.Shards {
			if slices.Contains(r, id) {
				affected = append(affected, i)
			}
		}
		if err := n.askRemove(ctx, st.members, id); err != nil {
			return err
		}
	}
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	var why error
	for {
		if why = n.removalWhole(ctx, id, affected); why == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster: removing %s: not whole by the deadline: %w", id, why)
		case <-t.C:
		}
	}
}

// removalPossible refuses a removal that cannot leave the cluster whole:
// the last node, or fewer live nodes left than a full replica set needs.
// A member this node sees down is asked directly first (it may have just
// come back): the refusal rests on a fresh answer.
func (n *Node) removalPossible(ctx context.Context, m *Membership, id string) error {
	var rest, down []string
	live := 0
	for _, mb := range m.Nodes {
		if mb.ID == id || slices.Contains(m.Draining, mb.ID) {
			continue
		}
		rest = append(rest, mb.ID)
		if mb.ID == n.id || n.health.up(mb.ID) || n.answers(ctx, mb) {
			live++
		} else {
			down = append(down, mb.ID)
		}
	}
	if len(rest) == 0 {
		return errors.New("cluster: cannot remove the last node")
	}
	need := min(n.cfg.ReplicationFactor, len(rest))
	if live < need {
		return fmt.Errorf("cluster: cannot remove %s: every shard needs %d live replicas on the other nodes, but only %d of them are up (down: %s); bring them back or remove them first",
			id, need, live, strings.Join(down, ", "))
	}
	return nil
}

// answers reports whether member mb answers a status request within a
// second.
func (n *Node) answers(ctx context.Context, mb Member) bool {
	cctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	_, err := n.call(cctx, mb.Bus, rpcRequest{Op: "status", From: n.self})
	return err == nil
}

// askRemove sends the removal to the controller leader through any member.
func (n *Node) askRemove(ctx context.Context, m *Membership, id string) error {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		var last error
		for _, mb := range m.Nodes {
			var err error
			if mb.ID == n.id {
				err = n.ctrlRemove(id)
			} else {
				cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				_, err = n.call(cctx, mb.Bus, rpcRequest{Op: "remove", From: n.self, Target: id})
				cancel()
			}
			if err == nil {
				return nil
			}
			if err.Error() != errNotCtrlLeader.Error() {
				last = err
			}
		}
		select {
		case <-ctx.Done():
			if last == nil {
				last = errors.New("no controller leader answered")
			}
			return fmt.Errorf("cluster: removing %s: %w (%v)", id, ctx.Err(), last)
		case <-t.C:
		}
	}
}

// removalWhole asks every member for the configurations of the groups it
// leads and reports what keeps the cluster from being whole without id
// (nil once it is).
func (n *Node) removalWhole(ctx context.Context, id string, affected []int) error {
	st := n.st.Load()
	type answer struct {
		confs   []groupConf
		members *Membership
	}
	ch := make(chan answer, len(st.members.Nodes))
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	for _, mb := range st.members.Nodes {
		go func() {
			if mb.ID == n.id {
				c, m := n.ledConfs()
				ch <- answer{c, m}
				return
			}
			res, err := n.call(cctx, mb.Bus, rpcRequest{Op: "confs", From: n.self})
			if err != nil {
				ch <- answer{}
				return
			}
			ch <- answer{res.Confs, res.Members}
		}()
	}
	confs := map[int]groupConf{}
	var ctrlM *Membership
	for range st.members.Nodes {
		a := <-ch
		for _, gc := range a.confs {
			if cur, ok := confs[gc.Shard]; !ok || gc.Term > cur.Term {
				confs[gc.Shard] = gc
			}
		}
		if a.members != nil && (ctrlM == nil || a.members.Epoch > ctrlM.Epoch) {
			ctrlM = a.members
		}
	}
	return wholeWithout(id, affected, ctrlM, confs, n.cfg.ReplicationFactor)
}

// wholeWithout decides whether the cluster is whole without node id (see
// the top of this file) from the controller's Membership and the leaders'
// configurations (confs[-1] is the controller's); it names up to three
// problems otherwise.
func wholeWithout(id string, affected []int, m *Membership, confs map[int]groupConf, rf int) error {
	if m == nil {
		return errors.New("no controller leader answered")
	}
	if _, ok := m.Node(id); ok {
		var placed []int
		for i, r := range m.Shards {
			if slices.Contains(r, id) {
				placed = append(placed, i)
			}
		}
		return fmt.Errorf("still a member (draining: replicas placed on it: %v)", placed)
	}
	var probs []string
	cc, ok := confs[-1]
	switch {
	case !ok:
		probs = append(probs, "the controller's configuration is unknown")
	case !cc.Committed || slices.Contains(cc.Voters, id) || slices.Contains(cc.Nonvoters, id):
		probs = append(probs, "still in the controller group")
	}
	need := min(rf, len(m.Nodes)-len(m.Draining))
	check := slices.Clone(affected)
	for s, gc := range confs {
		if s >= 0 && (slices.Contains(gc.Voters, id) || slices.Contains(gc.Nonvoters, id)) && !slices.Contains(check, s) {
			check = append(check, s)
		}
	}
	slices.Sort(check)
	for _, s := range check {
		if s < len(m.Shards) && len(m.Shards[s]) == 0 {
			continue // retired meanwhile (the shard policy): nothing to be whole
		}
		gc, ok := confs[s]
		if !ok {
			probs = append(probs, fmt.Sprintf("shard %d: no leader answered", s))
			continue
		}
		if !gc.Committed || slices.Contains(gc.Voters, id) || slices.Contains(gc.Nonvoters, id) {
			probs = append(probs, fmt.Sprintf("shard %d: still a replica", s))
			continue
		}
		var ok2 []string
		var bad []string
		for _, v := range gc.Voters {
			_, member := m.Node(v)
			if member && slices.Contains(gc.Live, v) {
				ok2 = append(ok2, v)
			} else {
				bad = append(bad, v)
			}
		}
		if len(ok2) < need || len(bad) > 0 {
			msg := fmt.Sprintf("shard %d: %d of %d voters live", s, len(ok2), need)
			if len(bad) > 0 {
				msg += fmt.Sprintf(" (not live: %s)", strings.Join(bad, ", "))
			}
			probs = append(probs, msg)
		}
	}
	if len(probs) == 0 {
		return nil
	}
	if len(probs) > 3 {
		probs = append(probs[:3], fmt.Sprintf("and %d more", len(probs)-3))
	}
	return errors.New(strings.Join(probs, "; "))
}

// hasControllerState reports whether dir holds a controller replica's
// Raft state.
func hasControllerState(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "controller", "raft.db"))
	return err == nil
}
