package checker

import (
	"fmt"
	"sort"

	"github.com/raftstream/raftstream/jepsen/history"
)

// Groups checks consumer-group semantics per (stream, group):
//
//   - redelivered / redelivered-acked: XREADGROUP `>` delivers only entries
//     never delivered to the group, so an ID delivered by two ok `>` reads
//     is an anomaly; "-acked" when an ok XACK of it returned before the
//     second read began.
//   - acked-pending: an entry acknowledged by an ok XACK that returned
//     before an operation began is not pending for it: not re-read from a
//     consumer's PEL (XREADGROUP with an ID), not claimed by XAUTOCLAIM, not
//     listed by XPENDING.
//   - pending-lost: an entry delivered (by an ok `>` read or claim) before an
//     ok XPENDING began is listed by it, unless an XACK that may have
//     succeeded (ok or info) began before the probe returned, or an
//     XAUTOCLAIM reported it deleted.
//   - position-regression: every ID delivered by `>` is above every ID
//     delivered by `>` reads that returned before this one began
//     (last-delivered-id never moves backwards).
//   - never-delivered: when the history has a final window (a last heal)
//     in which an ok XREADGROUP `>` returned nothing (the group was
//     drained), every write on the stream acknowledged before that read
//     began was delivered to the group by some ok read or claim, or is
//     listed pending. Without a final window or such a read this part is
//     Unknown. With Options.Trims, writes missing from the
//     stream's final read are skipped (they may have been trimmed).
//     Options.Groups adds groups the history shows no operation of.
func Groups(in *Input) Result {
	type gk struct{ key, group string }
	var order []gk
	m := map[gk][]*history.Op{}
	writes := map[string][]*history.Op{}
	reads := map[string][]*history.Op{}
	for i := range in.Ops {
		o := &in.Ops[i]
		switch {
		case o.F.IsWrite() && o.Type == history.OK:
			writes[o.Key] = append(writes[o.Key], o)
		case isRead(o):
			reads[o.Key] = append(reads[o.Key], o)
		case o.Value.Group != "":
			g := gk{o.Key, o.Value.Group}
			if _, ok := m[g]; !ok {
				order = append(order, g)
			}
			m[g] = append(m[g], o)
		}
	}
	for key := range writes {
		for _, name := range in.Options.Groups {
			if g := (gk{key, name}); m[g] == nil {
				order = append(order, g)
				m[g] = []*history.Op{}
			}
		}
	}
	sort.Slice(order, func(i, j int) bool {
		if order[i].key != order[j].key {
			return order[i].key < order[j].key
		}
		return order[i].group < order[j].group
	})
	var as []Anomaly
	var notes []string
	unknown := false
	for _, g := range order {
		gs := &groupState{key: g.key, group: g.group, ops: m[g]}
		gs.index()
		as = append(as, gs.redelivery()...)
		as = append(as, gs.ackedPending()...)
		as = append(as, gs.pendingLost(in.Options.Trims)...)
		as = append(as, gs.position()...)
		if in.LastHeal < 0 {
			unknown = true
			continue
		}
		var fin *history.Op
		if in.Options.Trims {
			if fin = finalRead(reads[g.key]); fin == nil {
				unknown = true
				notes = append(notes, fmt.Sprintf("%s/%s: trimmed stream without a final read", g.key, g.group))
				continue
			}
		}
		drain := gs.drain(in.LastHeal)
		if drain == nil {
			unknown = true
			notes = append(notes, fmt.Sprintf("%s/%s: no ok XREADGROUP > returned nothing after the final heal (the group was not drained): eventual delivery not judged", g.key, g.group))
			continue
		}
		as = append(as, gs.neverDelivered(writes[g.key], fin, drain)...)
	}
	if in.LastHeal < 0 && len(order) > 0 {
		notes = append(notes, "no final heal: eventual delivery not judged")
	}
	notes = append(notes, fmt.Sprintf("%d groups checked", len(order)))
	return verdict("groups", as, unknown, notes)
}

type groupState struct {
	key, group string
	ops        []*history.Op
	fresh      []*history.Op                // ok XREADGROUP `>`
	acks       map[history.ID][]*history.Op // xack ops (ok or info) naming an ID
	deleted    map[history.ID]bool          // reported deleted by XAUTOCLAIM
	delivered  map[history.ID]*history.Op   // first ok op that handed the ID to a consumer
	seen       map[string]bool              // values delivered, claimed or listed pending
	pendingIDs map[*history.Op]map[history.ID]bool
}

func (g *groupState) index() {
	g.acks = map[history.ID][]*history.Op{}
	g.deleted = map[history.ID]bool{}
	g.delivered = map[history.ID]*history.Op{}
	g.seen = map[string]bool{}
	g.pendingIDs = map[*history.Op]map[history.ID]bool{}
	for _, o := range g.ops {
		if o.Type == history.Fail {
			continue
		}
		switch o.F {
		case history.XAck:
			for _, s := range o.Value.IDs {
				g.acks[idOf(s)] = append(g.acks[idOf(s)], o)
			}
		case history.XAutoClaim:
			for _, s := range o.Value.IDs {
				g.deleted[idOf(s)] = true
			}
		}
		if o.Type != history.OK {
			continue
		}
		if o.F == history.XReadGroup && o.Value.From == ">" {
			g.fresh = append(g.fresh, o)
		}
		if o.F == history.XReadGroup || o.F == history.XAutoClaim {
			for _, e := range o.Value.Entries {
				id := idOf(e.ID)
				if d, ok := g.delivered[id]; !ok || o.Return < d.Return {
					g.delivered[id] = o
				}
				g.seen[e.Value] = true
			}
		}
		if o.F == history.XPending {
			set := map[history.ID]bool{}
			for _, p := range o.Value.Pending {
				set[idOf(p.ID)] = true
			}
			g.pendingIDs[o] = set
		}
	}
}

// ackedBefore returns an ok XACK of id that returned before t, or nil.
func (g *groupState) ackedBefore(id history.ID, t int64) *history.Op {
	for _, a := range g.acks[id] {
		if a.Type == history.OK && a.Return < t {
			return a
		}
	}
	return nil
}

func (g *groupState) redelivery() []Anomaly {
	var as []Anomaly
	first := map[history.ID]*history.Op{}
	for _, o := range g.fresh {
		for _, e := range o.Value.Entries {
			id := idOf(e.ID)
			p, ok := first[id]
			if !ok {
				first[id] = o
				continue
			}
			if a := g.ackedBefore(id, o.Call); a != nil {
				as = append(as, Anomaly{Kind: "redelivered-acked", Key: g.key, Ops: idxs(p, a, o),
					Msg: fmt.Sprintf("group %s: %s delivered %s again by >, after %s delivered it and %s acknowledged it", g.group, o, e.ID, p, a)})
			} else {
				as = append(as, Anomaly{Kind: "redelivered", Key: g.key, Ops: idxs(p, o),
					Msg: fmt.Sprintf("group %s: %s delivered %s again by >, after %s delivered it", g.group, o, e.ID, p)})
			}
		}
	}
	return as
}

func (g *groupState) ackedPending() []Anomaly {
	var as []Anomaly
	for _, o := range g.ops {
		if o.Type != history.OK {
			continue
		}
		var ids []string
		switch {
		case o.F == history.XReadGroup && o.Value.From != ">", o.F == history.XAutoClaim:
			for _, e := range o.Value.Entries {
				ids = append(ids, e.ID)
			}
		case o.F == history.XPending:
			for _, p := range o.Value.Pending {
				ids = append(ids, p.ID)
			}
		}
		for _, s := range ids {
			if a := g.ackedBefore(idOf(s), o.Call); a != nil {
				as = append(as, Anomaly{Kind: "acked-pending", Key: g.key, Ops: idxs(a, o),
					Msg: fmt.Sprintf("group %s: %s still treats %s as pending after %s acknowledged it", g.group, o, s, a)})
			}
		}
	}
	return as
}

func (g *groupState) pendingLost(trims bool) []Anomaly {
	var as []Anomaly
	var ids []history.ID
	for id := range g.delivered {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i].Less(ids[j]) })
	for _, p := range g.ops {
		set, ok := g.pendingIDs[p]
		if !ok {
			continue
		}
		for _, id := range ids {
			d := g.delivered[id]
			if d.Return >= p.Call || set[id] || g.deleted[id] || (trims && d.F == history.XAutoClaim) {
				continue
			}
			acked := false
			for _, a := range g.acks[id] {
				acked = acked || a.Call < p.Return
			}
			if !acked {
				as = append(as, Anomaly{Kind: "pending-lost", Key: g.key, Ops: idxs(d, p),
					Msg: fmt.Sprintf("group %s: %s delivered %s, never acknowledged, but %s does not list it pending", g.group, d, id, p)})
			}
		}
	}
	return as
}

func (g *groupState) position() []Anomaly {
	var as []Anomaly
	maxOf := func(o *history.Op) (history.ID, bool) {
		es := o.Value.Entries
		if len(es) == 0 {
			return history.ID{}, false
		}
		return idOf(es[len(es)-1].ID), true
	}
	realTimeMax(g.fresh, maxOf, func(o, max *history.Op, maxID history.ID) {
		if max == nil || len(o.Value.Entries) == 0 {
			return
		}
		if first := idOf(o.Value.Entries[0].ID); !maxID.Less(first) {
			as = append(as, Anomaly{Kind: "position-regression", Key: g.key, Ops: idxs(max, o),
				Msg: fmt.Sprintf("group %s: %s delivered %s by >, not above %s delivered by %s which returned before it began",
					g.group, o, first, maxID, max)})
		}
	})
	return as
}

// drain returns the last ok XREADGROUP `>` invoked after the final heal
// that returned no entries (nothing was left to deliver when it ran), or
// nil.
func (g *groupState) drain(lastHeal int64) *history.Op {
	var d *history.Op
	for _, o := range g.fresh {
		if o.Call >= lastHeal && len(o.Value.Entries) == 0 && (d == nil || o.Call > d.Call) {
			d = o
		}
	}
	return d
}

func (g *groupState) neverDelivered(writes []*history.Op, fin, drain *history.Op) []Anomaly {
	inFinal := map[string]bool{}
	if fin != nil {
		for _, e := range fin.Value.Entries {
			inFinal[e.Value] = true
		}
	}
	var as []Anomaly
	done := map[string]bool{}
	for _, w := range writes {
		v := w.Value.Value
		if g.seen[v] || done[v] || w.Return >= drain.Call || (fin != nil && !inFinal[v]) || g.listedPending(w.Value.ID) {
			continue
		}
		done[v] = true
		as = append(as, Anomaly{Kind: "never-delivered", Key: g.key, Ops: idxs(w),
			Msg: fmt.Sprintf("group %s: acknowledged %s of %q (id %s) was never delivered to the group", g.group, w, v, w.Value.ID)})
	}
	return as
}

// listedPending reports whether some ok XPENDING listed id.
func (g *groupState) listedPending(id string) bool {
	if id == "" {
		return false
	}
	x := idOf(id)
	for _, set := range g.pendingIDs {
		if set[x] {
			return true
		}
	}
	return false
}
