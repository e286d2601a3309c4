package cluster

import (
	"fmt"
	"slices"

	"github.com/raftstream/raftstream/slots"
)

// The slot → shard map is replicated state: part of the controller's
// Membership (Membership.Slots), changed only by the controller leader, one
// proposal (Membership Epoch+1) at a time, and adopted by every node with
// the rest of the Membership (controller replica, status polls, node.json).
// It has its own epoch, which grows each time slots change owner, so that
// CLUSTER NODES can report it as Redis's config epoch.
//
// A Membership written before the map was replicated has no Slots: its map
// is the contiguous one of its shard count (slots.NewMap), epoch 0, exactly
// what such a cluster routed by. Nothing is rewritten on start: the first
// change the controller makes materializes the table (an upgrade without a
// format break; node.json version 2 says a file may carry it).
//
// Routing reads the map lock-free: the node publishes a compiled view
// (slotView) through an atomic pointer whenever its Membership changes.

// SlotTable is the replicated slot → shard map and the slot moves in
// flight.
type SlotTable struct {
	// Epoch grows by one with every change of slot ownership.
	Epoch uint64 `json:"epoch"`
	// Runs assigns every slot to a shard (slots.FromRuns), in slot order.
	Runs []slots.Run `json:"runs"`
	// Moves are the slot moves in flight (migrate.go), by ID.
	Moves []SlotMove `json:"moves,omitempty"`
	// NextMove is the ID the next move gets (IDs are never reused).
	NextMove uint64 `json:"next_move,omitempty"`
	// Fresh lists the shards added and not led yet, with the voters they
	// are bootstrapped with (shards.go).
	Fresh []FreshShard `json:"fresh,omitempty"`
}

// SlotMove is one slot range moving from shard From to shard To.
type SlotMove struct {
	ID          uint64 `json:"id"`
	First, Last int
	From, To    int
}

// Range is the move's slot range.
func (mv SlotMove) Range() slots.Range { return slots.Range{First: mv.First, Last: mv.Last} }

func (t *SlotTable) clone() *SlotTable {
	if t == nil {
		return nil
	}
	c := *t
	c.Runs = slices.Clone(t.Runs)
	c.Moves = slices.Clone(t.Moves)
	c.Fresh = slices.Clone(t.Fresh)
	for i := range c.Fresh {
		c.Fresh[i].Servers = slices.Clone(t.Fresh[i].Servers)
	}
	return &c
}

// equal reports whether t and o are the same table (nil is the default map
// and never equal to a materialized one: materializing is a change).
func (t *SlotTable) equal(o *SlotTable) bool {
	if t == nil || o == nil {
		return t == o
	}
	return t.Epoch == o.Epoch && t.NextMove == o.NextMove && slices.Equal(t.Runs, o.Runs) && slices.Equal(t.Moves, o.Moves) &&
		slices.EqualFunc(t.Fresh, o.Fresh, func(a, b FreshShard) bool { return a.Shard == b.Shard && slices.Equal(a.Servers, b.Servers) })
}

// slotTable returns m's slot table, materializing the default (contiguous
// ranges over its shards, epoch 0) for a Membership that has none. The
// result is shared with m when m has one: clone before changing it.
func (m *Membership) slotTable() *SlotTable {
	if m.Slots != nil {
		return m.Slots
	}
	return &SlotTable{Runs: slices.Clone(slots.NewMap(max(len(m.Shards), 1)).Runs())}
}

// checkSlots verifies m's slot table: every slot assigned to a live shard
// (one with replicas), moves over assigned ranges between live shards, no
// slot in two moves.
func (m *Membership) checkSlots() error {
	t := m.Slots
	if t == nil {
		return nil
	}
	sm, err := slots.FromRuns(t.Runs)
	if err != nil {
		return err
	}
	live := func(s int) bool { return s >= 0 && s < len(m.Shards) && len(m.Shards[s]) > 0 }
	for _, r := range sm.Runs() {
		if !live(r.Shard) {
			return fmt.Errorf("slots %d-%d are assigned to shard %d, which does not exist", r.First, r.Last, r.Shard)
		}
	}
	var moving [slots.Count]bool
	for _, mv := range t.Moves {
		if mv.First < 0 || mv.Last >= slots.Count || mv.Last < mv.First || !live(mv.From) || !live(mv.To) || mv.From == mv.To {
			return fmt.Errorf("bad slot move %+v", mv)
		}
		if mv.ID == 0 || mv.ID >= t.NextMove {
			return fmt.Errorf("slot move %+v has an ID not below next_move %d", mv, t.NextMove)
		}
		for s := mv.First; s <= mv.Last; s++ {
			if moving[s] {
				return fmt.Errorf("slot %d is in two moves", s)
			}
			moving[s] = true
		}
	}
	for _, f := range t.Fresh {
		if !live(f.Shard) || len(f.Servers) == 0 {
			return fmt.Errorf("bad added shard %+v", f)
		}
	}
	return nil
}

// slotView is a node's compiled, immutable copy of its slot table: what
// routing reads on every command, lock-free (Node.slots).
type slotView struct {
	epoch uint64
	m     *slots.Map
	moves []SlotMove
	// moving has a bit set for every slot in a move in flight.
	moving [slots.Count / 64]uint64
}

func newSlotView(t *SlotTable) *slotView {
	m, err := slots.FromRuns(t.Runs)
	if err != nil {
		// Memberships are checked before they are adopted.
		panic(fmt.Sprintf("cluster: slot table: %v", err))
	}
	v := &slotView{epoch: t.Epoch, m: m, moves: t.Moves}
	for _, mv := range t.Moves {
		for s := mv.First; s <= mv.Last; s++ {
			v.moving[s/64] |= 1 << (s % 64)
		}
	}
	return v
}

// move returns the move in flight that slot belongs to.
func (v *slotView) move(slot int) (SlotMove, bool) {
	if v.moving[slot/64]&(1<<(slot%64)) == 0 {
		return SlotMove{}, false
	}
	for _, mv := range v.moves {
		if mv.Range().Contains(slot) {
			return mv, true
		}
	}
	return SlotMove{}, false
}

// publishSlots compiles members' slot table into the view routing reads.
// Called with stMu held whenever the published Membership changes.
func (n *Node) publishSlots(members *Membership) {
	var t *SlotTable
	if members == nil {
		t = &SlotTable{Runs: slices.Clone(slots.NewMap(n.formedShards()).Runs())}
	} else {
		t = members.slotTable()
	}
	if cur := n.slots.Load(); cur != nil && cur.epoch == t.Epoch && slices.Equal(cur.moves, t.Moves) &&
		slices.Equal(cur.m.Runs(), t.Runs) {
		return
	}
	n.slots.Store(newSlotView(t))
}

// ShardOfSlot is part of what the RESP server needs: the shard owning slot
// in this node's copy of the slot map — except that a slot this copy shows
// moving to a shard this node leads, whose log has already taken the slot
// over (IMPORTED), goes to that shard: the controller has flipped the map
// or is about to, and this node's copy lags. Routing it to the source would
// send clients to the source's leader, whose newer map sends them back
// here (a MOVED loop for as long as this node's copy lags).
func (n *Node) ShardOfSlot(slot int) int {
	v := n.slots.Load()
	owner := v.m.Shard(slot)
	if v.moving[slot/64]&(1<<(slot%64)) != 0 {
		if mv, ok := v.move(slot); ok && n.tookOver(mv) {
			return mv.To
		}
	}
	return owner
}

// tookOver reports whether this node leads mv's target shard and that
// shard's log has completed mv's import.
func (n *Node) tookOver(mv SlotMove) bool {
	ls := n.shard(mv.To)
	return ls != nil && ls.s.IsLeader() && ls.s.Imported(mv.ID)
}

// ShardOfKey returns the shard owning key's slot.
func (n *Node) ShardOfKey(key []byte) int { return n.ShardOfSlot(slots.Of(key)) }

// SlotMoving reports the move in flight slot belongs to, if any: its
// source and target shards (part of what the RESP server needs, for ASKING).
func (n *Node) SlotMoving(slot int) (from, to int, ok bool) {
	mv, ok := n.slots.Load().move(slot)
	return mv.From, mv.To, ok
}

// SlotEpoch is the epoch of this node's copy of the slot map.
func (n *Node) SlotEpoch() uint64 { return n.slots.Load().epoch }

// SlotMoves lists the slot moves in flight in this node's copy of the map.
func (n *Node) SlotMoves() []SlotMove { return slices.Clone(n.slots.Load().moves) }
