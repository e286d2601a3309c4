package checker

import (
	"testing"

	"github.com/raftstream/raftstream/jepsen/history"
)

func gv(consumer, from string) *history.Value {
	return &history.Value{Group: "g", Consumer: consumer, From: from}
}

func (b *hb) deliver(p history.Process, consumer, from string, e ...history.Entry) int64 {
	return b.op(p, history.XReadGroup, s, history.OK, gv(consumer, from), &history.Value{Entries: e})
}

func (b *hb) ack(p history.Process, t history.Type, ids ...string) int64 {
	return b.op(p, history.XAck, s, t, &history.Value{Group: "g", IDs: ids}, &history.Value{Count: len(ids)})
}

func (b *hb) pending(p history.Process, ps ...history.Pending) int64 {
	return b.op(p, history.XPending, s, history.OK, &history.Value{Group: "g"}, &history.Value{Pending: ps})
}

// goodGroup: two writes, both delivered, one acked, the other pending then
// claimed by another consumer and acked; the final window sees everything.
func goodGroup() *hb {
	var b hb
	b.add1(0, s, "a", "1-0")
	b.add1(0, s, "b", "2-0")
	b.deliver(1, "c1", ">", es("1-0", "a")...)
	b.ack(1, history.OK, "1-0")
	b.deliver(2, "c2", ">", es("2-0", "b")...)
	b.pending(3, history.Pending{ID: "2-0", Consumer: "c2", Deliveries: 1})
	b.nemesis(history.Heal, "")
	b.op(1, history.XAutoClaim, s, history.OK, &history.Value{Group: "g", Consumer: "c1", From: "0-0"},
		&history.Value{Entries: es("2-0", "b")})
	b.deliver(1, "c1", "0", es("2-0", "b")...)
	b.ack(1, history.OK, "2-0")
	b.pending(3)
	b.deliver(1, "c1", ">")
	return &b
}

func TestGroupsGood(t *testing.T) {
	wantValid(t, goodGroup().check(t, Groups, Options{}), Ok, "")
}

func TestGroupsBad(t *testing.T) {
	t.Run("redelivered acked entry", func(t *testing.T) {
		b := goodGroup()
		d := b.deliver(2, "c2", ">", es("1-0", "a")...)
		wantValid(t, b.check(t, Groups, Options{}), Illegal, "redelivered-acked", d)
	})
	t.Run("acked entry still pending", func(t *testing.T) {
		b := goodGroup()
		p := b.pending(3, history.Pending{ID: "1-0", Consumer: "c1", Deliveries: 1})
		wantValid(t, b.check(t, Groups, Options{}), Illegal, "acked-pending", p)
	})
	t.Run("acked entry claimed", func(t *testing.T) {
		b := goodGroup()
		c := b.op(1, history.XAutoClaim, s, history.OK, &history.Value{Group: "g", Consumer: "c3", From: "0-0"},
			&history.Value{Entries: es("1-0", "a")})
		wantValid(t, b.check(t, Groups, Options{}), Illegal, "acked-pending", c)
	})
	t.Run("delivered entry dropped from the PEL", func(t *testing.T) {
		var b hb
		b.add1(0, s, "a", "1-0")
		d := b.deliver(1, "c1", ">", es("1-0", "a")...)
		p := b.pending(3)
		wantValid(t, b.check(t, Groups, Options{}), Illegal, "pending-lost", d, p)
	})
	t.Run("unknown ack may explain a missing pending entry", func(t *testing.T) {
		var b hb
		b.add1(0, s, "a", "1-0")
		b.deliver(1, "c1", ">", es("1-0", "a")...)
		b.ack(1, history.Info, "1-0")
		b.pending(3)
		wantValid(t, b.check(t, Groups, Options{}), Unknown, "") // no final heal
	})
	t.Run("group position regression", func(t *testing.T) {
		var b hb
		b.add1(0, s, "a", "1-0")
		b.add1(0, s, "b", "2-0")
		b.add1(0, s, "c", "3-0")
		d1 := b.deliver(1, "c1", ">", es("1-0", "a", "2-0", "b")...)
		d2 := b.deliver(2, "c2", ">", es("3-0", "c")...)
		_ = d2
		// After a failover the group forgot 2-0 was delivered: "b" comes again
		// (a redelivery) and, moving backwards, is below 3-0.
		d3 := b.deliver(2, "c2", ">", es("2-0", "b")...)
		r := b.check(t, Groups, Options{})
		wantValid(t, r, Illegal, "position-regression", d3)
		wantValid(t, r, Illegal, "redelivered", d1, d3)
	})
	t.Run("acknowledged write never delivered", func(t *testing.T) {
		b := goodGroup()
		w := b.add1(0, s, "c", "3-0")
		b.deliver(1, "c1", ">")
		wantValid(t, b.check(t, Groups, Options{}), Illegal, "never-delivered", w)
	})
	t.Run("an undrained group is unknown", func(t *testing.T) {
		// The final drain failed (TRYAGAIN while a replica moved): the
		// write may still be delivered, so nothing is proven.
		var b hb
		b.add1(0, s, "a", "1-0")
		b.nemesis(history.Heal, "")
		b.add1(0, s, "b", "2-0")
		b.deliver(1, "c1", ">", es("1-0", "a")...)
		b.op(1, history.XReadGroup, s, history.Fail, gv("c1", ">"), nil)
		wantValid(t, b.check(t, Groups, Options{}), Unknown, "")
		b.deliver(1, "c1", ">") // drained: "b" was acknowledged before, and never came
		wantValid(t, b.check(t, Groups, Options{}), Illegal, "never-delivered", 3)
	})
	t.Run("a write acknowledged after the drain began is not judged", func(t *testing.T) {
		var b hb
		b.nemesis(history.Heal, "")
		b.inv(1, history.XReadGroup, s, gv("c1", ">"))
		b.add1(0, s, "a", "1-0")
		b.done(1, history.OK, &history.Value{})
		wantValid(t, b.check(t, Groups, Options{}), Ok, "")
	})
	t.Run("no final heal is unknown", func(t *testing.T) {
		var b hb
		b.add1(0, s, "a", "1-0")
		wantValid(t, b.check(t, Groups, Options{}), Ok, "") // no group ops at all
		b.deliver(1, "c1", ">", es("1-0", "a")...)
		wantValid(t, b.check(t, Groups, Options{}), Unknown, "")
	})
	t.Run("a group named in Options.Groups but absent from the history", func(t *testing.T) {
		// Its reader never completed a read: nothing shows the write
		// delivered, nor the group drained.
		var b hb
		b.nemesis(history.Heal, "")
		b.add1(0, s, "a", "1-0")
		wantValid(t, b.check(t, Groups, Options{}), Ok, "")
		o := Options{Groups: []string{"g"}}
		wantValid(t, b.check(t, Groups, o), Unknown, "")
		b.deliver(1, "c1", ">", es("1-0", "a")...)
		b.deliver(1, "c1", ">")
		wantValid(t, b.check(t, Groups, o), Ok, "")
	})
}
