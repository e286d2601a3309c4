package cluster

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/hashicorp/raft"
)

// The controller group follows the membership (DESIGN.md, "Controller
// voters").
//
// Membership.CtrlVoters is the desired voter set of the controller group.
// Only the controller leader changes it (planCtrlVoters, through the
// controller log like every other topology decision, so it survives a
// failover of the controller itself):
//
//   - a member that is draining, removed, or down for longer than
//     Config.DeadAfter (the grace period) is dropped from it;
//   - it holds ctrlTarget(members not dropped) voters — the largest odd
//     number up to maxControllerVoters: live members are added, lowest ID
//     first, while it has fewer; a surplus (after a removal) goes, voters
//     that are down first.
//
// The leader then converges the group's Raft configuration to that set one
// step at a time (converge, reconfig.go): a new voter is added as a
// non-voter, promoted once it has caught up, and only then is a surplus
// voter removed; a live surplus voter is not removed while a remaining
// voter is down. Every node runs a controller replica exactly while it is
// listed in CtrlVoters or still finds itself in the group's configuration
// (reconcileController); a replica is bootstrapped only at formation, so a
// joined node never starts an election in a configuration of its own.

// maxControllerVoters bounds the controller group's size.
const maxControllerVoters = 5

// ctrlTarget is how many controller voters a cluster of n eligible members
// should have: the largest odd number up to min(n, maxControllerVoters),
// so a quorum is never larger than an odd count needs (1, 1, 3, 3, 5, 5…).
func ctrlTarget(n int) int {
	t := min(n, maxControllerVoters)
	if t > 1 && t%2 == 0 {
		t--
	}
	return t
}

// ctrlVoterIDs is m's desired controller voter set: CtrlVoters, or, for a
// Membership formed before that list existed, the first min(5, N) members
// by ID (what formation used then).
func ctrlVoterIDs(m *Membership) []string {
	if len(m.CtrlVoters) > 0 {
		return m.CtrlVoters
	}
	var out []string
	for i, n := range m.Nodes {
		if i == maxControllerVoters {
			break
		}
		out = append(out, n.ID)
	}
	return out
}

// controllerVoters is the controller's configuration at formation: m's
// desired voters with their RESP addresses.
func controllerVoters(m *Membership) []raft.Server {
	var out []raft.Server
	for _, id := range ctrlVoterIDs(m) {
		n, _ := m.Node(id)
		out = append(out, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(id), Address: raft.ServerAddress(n.RESPAddr())})
	}
	return out
}

// planCtrlVoters returns the desired controller voters given the current
// list cur, the members (sorted by ID), which of them may no longer vote
// (dropped: draining, or down past the grace period) and which are live.
// The target is ctrlTarget(members not dropped): live members are added,
// lowest ID first, while there are fewer voters; while there are more (a
// voter left), voters that are down go first, then the highest IDs. A voter
// that is merely down is otherwise kept: the group tolerates a minority
// down. Pure and deterministic, and a fixed point of its own output.
func planCtrlVoters(cur, members []string, dropped, live func(id string) bool) []string {
	var keep []string
	for _, id := range cur {
		if slices.Contains(members, id) && !dropped(id) && !slices.Contains(keep, id) {
			keep = append(keep, id)
		}
	}
	candidates := 0
	for _, id := range members {
		if !dropped(id) {
			candidates++
		}
	}
	target := ctrlTarget(candidates)
	for _, id := range members {
		if len(keep) >= target {
			break
		}
		if !dropped(id) && live(id) && !slices.Contains(keep, id) {
			keep = append(keep, id)
		}
	}
	slices.Sort(keep)
	for len(keep) > target {
		k := len(keep) - 1
		for j := len(keep) - 1; j >= 0; j-- {
			if !live(keep[j]) {
				k = j
				break
			}
		}
		keep = slices.Delete(keep, k, k+1)
	}
	return keep
}

// planControllerVoters is the controller leader's step on m (a copy of the
// controller's Membership being planned): it sets m.CtrlVoters.
func (n *Node) planControllerVoters(m *Membership) {
	ids := make([]string, len(m.Nodes))
	for i, mb := range m.Nodes {
		ids[i] = mb.ID
	}
	dropped := func(id string) bool {
		return slices.Contains(m.Draining, id) || n.deadPastGrace(id)
	}
	live := func(id string) bool { return id == n.id || n.health.up(id) }
	want := planCtrlVoters(ctrlVoterIDs(m), ids, dropped, live)
	if !slices.Equal(want, m.CtrlVoters) {
		if len(m.CtrlVoters) > 0 || !slices.Equal(want, ctrlVoterIDs(m)) {
			n.log.Info("controller: voters planned", "voters", want, "was", ctrlVoterIDs(m))
		}
		m.CtrlVoters = want
	}
}

// deadPastGrace reports whether member id has been down for longer than
// Config.DeadAfter (never for this node, or with DeadAfter disabled).
func (n *Node) deadPastGrace(id string) bool {
	return id != n.id && n.cfg.DeadAfter > 0 && n.health.downFor(id) > n.cfg.DeadAfter
}

// reconcileController opens this node's controller replica when m lists
// it as a controller voter, closes (and deletes) it once it is neither
// listed nor part of the group's configuration, and, on the controller
// leader, takes one configuration step towards m's voters.
func (n *Node) reconcileController(m *Membership) {
	want := slices.Contains(ctrlVoterIDs(m), n.id)
	c := n.ctrl.Load()
	switch {
	case c == nil && want:
		if err := n.startController(m, false); err != nil {
			n.log.Error("controller: opening the replica placed here", "err", err)
		}
	case c == nil:
	case c.r.State() == raft.Leader:
		if got := c.fsm.get(); got != nil {
			n.converge(groupView{name: ControllerGroup, r: c.r, acks: c.acks, transfer: c.r.LeadershipTransferToServer},
				ctrlVoterIDs(got), got)
		}
	case !want && (!inConfig(c.r, n.id) || n.ctrlLeftBehind(c)):
		n.ctrl.Store(nil)
		err := errors.Join(c.close(), os.RemoveAll(filepath.Join(n.dir, "controller")))
		n.log.Info("controller: replica no longer placed here closed", "err", err)
	}
}

// ctrlLeftBehind is leftBehind for the controller replica: no leader has
// contacted it for drainGrace (a leader stops replicating to a server as
// soon as it appends the configuration that removes it, so the removed
// replica may never learn).
func (n *Node) ctrlLeftBehind(c *controller) bool {
	return c.r.State() != raft.Leader && time.Since(c.r.LastContact()) >= drainGrace
}

// startController opens this node's controller replica and its loop.
// bootstrap is true only for a Membership never adopted from the
// controller (formation): a replica placed here later starts empty and is
// added to the group by its leader.
func (n *Node) startController(m *Membership, bootstrap bool) error {
	c, err := n.openController(m, bootstrap)
	if err != nil {
		return err
	}
	n.ctrl.Store(c)
	n.goFunc(func() { n.controllerLoop(c) })
	n.log.Info("controller: replica opened", "bootstrap", bootstrap)
	return nil
}

// ctrlConfig reads the controller group's latest configuration as this
// node's replica sees it (ok false without a replica).
func (n *Node) ctrlConfig() (voters, nonvoters []string, ok bool) {
	c := n.ctrl.Load()
	if c == nil {
		return nil, nil, false
	}
	f := c.r.GetConfiguration()
	if f.Error() != nil {
		return nil, nil, false
	}
	for _, s := range f.Configuration().Servers {
		if s.Suffrage == raft.Voter {
			voters = append(voters, string(s.ID))
		} else {
			nonvoters = append(nonvoters, string(s.ID))
		}
	}
	return voters, nonvoters, true
}
