package checker

import (
	"testing"

	"github.com/raftstream/raftstream/jepsen/history"
)

const s = "s0"

func TestLost(t *testing.T) {
	t.Run("good", func(t *testing.T) {
		var b hb
		b.add1(0, s, "a", "1-0")
		b.add1(1, s, "b", "2-0")
		b.op(1, history.XAdd, s, history.Info, &history.Value{Value: "c"}, nil) // unknown: may be absent
		b.read(2, s, es("1-0", "a", "2-0", "b")...)
		wantValid(t, b.check(t, Lost, Options{}), Ok, "")
	})
	t.Run("lost write", func(t *testing.T) {
		var b hb
		b.add1(0, s, "a", "1-0")
		w := b.add1(1, s, "b", "2-0")
		r := b.read(2, s, es("1-0", "a")...)
		wantValid(t, b.check(t, Lost, Options{}), Illegal, "lost", w, r)
	})
	t.Run("concurrent with final read is not judged", func(t *testing.T) {
		var b hb
		b.add1(0, s, "a", "1-0")
		b.inv(1, history.XAdd, s, &history.Value{Value: "b"})
		b.read(2, s, es("1-0", "a")...)
		b.done(1, history.OK, &history.Value{Value: "b", ID: "2-0"})
		wantValid(t, b.check(t, Lost, Options{}), Ok, "")
	})
	t.Run("trimmed is not lost", func(t *testing.T) {
		var b hb
		w := b.add1(0, s, "a", "1-0")
		b.add1(0, s, "b", "2-0")
		b.read(2, s, es("2-0", "b")...)
		wantValid(t, b.check(t, Lost, Options{Trims: true}), Ok, "")
		r := b.check(t, Lost, Options{})
		wantValid(t, r, Illegal, "lost", w)
	})
	t.Run("no final read is unknown", func(t *testing.T) {
		var b hb
		b.add1(0, s, "a", "1-0")
		wantValid(t, b.check(t, Lost, Options{}), Unknown, "")
	})
}

func TestDuplicates(t *testing.T) {
	var b hb
	b.add1(0, s, "a", "1-0")
	b.op(0, history.XAdd, s, history.Info, &history.Value{Value: "b"}, nil)
	b.read(1, s, es("1-0", "a", "2-0", "b")...)
	wantValid(t, b.check(t, Duplicates, Options{}), Ok, "")
	// The unknown-outcome write "b" was applied twice (a retried proposal).
	r := b.read(1, s, es("1-0", "a", "2-0", "b", "3-0", "b")...)
	wantValid(t, b.check(t, Duplicates, Options{}), Illegal, "duplicate-value", r)
	var c hb
	r = c.op(1, history.XReadGroup, s, history.OK, &history.Value{Group: "g", Consumer: "c", From: ">"},
		&history.Value{Entries: es("1-0", "a", "1-0", "b")})
	wantValid(t, c.check(t, Duplicates, Options{}), Illegal, "duplicate-id", r)
}

func TestIDs(t *testing.T) {
	t.Run("good", func(t *testing.T) {
		var b hb
		b.add1(0, s, "a", "1-0")
		b.inv(0, history.XAdd, s, &history.Value{Value: "b"})
		b.inv(1, history.XAdd, s, &history.Value{Value: "c"})
		// concurrent: completion order may differ from ID order
		b.done(1, history.OK, &history.Value{Value: "c", ID: "3-0"})
		b.done(0, history.OK, &history.Value{Value: "b", ID: "2-0"})
		b.read(2, s, es("1-0", "a", "2-0", "b", "3-0", "c")...)
		wantValid(t, b.check(t, IDs, Options{}), Ok, "")
	})
	t.Run("reordered ids in a read", func(t *testing.T) {
		var b hb
		b.add1(0, s, "a", "1-0")
		b.add1(0, s, "b", "2-0")
		r := b.read(2, s, es("2-0", "b", "1-0", "a")...)
		wantValid(t, b.check(t, IDs, Options{}), Illegal, "read-order", r)
	})
	t.Run("xadd reply below an earlier one", func(t *testing.T) {
		var b hb
		w1 := b.add1(0, s, "a", "5-0")
		w2 := b.add1(1, s, "b", "4-0")
		wantValid(t, b.check(t, IDs, Options{}), Illegal, "xadd-order", w1, w2)
	})
	t.Run("equal ids", func(t *testing.T) {
		var b hb
		b.add1(0, s, "a", "5-0")
		b.add1(1, s, "b", "5-0")
		wantValid(t, b.check(t, IDs, Options{}), Illegal, "id-mismatch")
	})
	t.Run("read disagrees with xadd reply", func(t *testing.T) {
		var b hb
		w := b.add1(0, s, "a", "1-0")
		r := b.read(2, s, es("1-1", "a")...)
		wantValid(t, b.check(t, IDs, Options{}), Illegal, "id-mismatch", w, r)
	})
	t.Run("idmp retry must return the same id", func(t *testing.T) {
		var b hb
		in := &history.Value{Value: "a", Producer: "p", IID: "1"}
		b.op(0, history.XAddIdmp, s, history.Info, in, nil)
		b.op(0, history.XAddIdmp, s, history.OK, in, &history.Value{ID: "1-0"})
		b.op(0, history.XAddIdmp, s, history.OK, in, &history.Value{ID: "1-0"})
		wantValid(t, b.check(t, IDs, Options{}), Ok, "")
		w := b.op(0, history.XAddIdmp, s, history.OK, in, &history.Value{ID: "2-0"})
		wantValid(t, b.check(t, IDs, Options{}), Illegal, "id-mismatch", w)
	})
	t.Run("idmp retry reports the ID of an earlier send", func(t *testing.T) {
		// Found by the soak (idempotent workload): send 1 of "a" times out
		// but applies (ID 5-0); "b" is appended (6-0) and returns; the retry
		// of "a" is deduplicated and returns 5-0. Legal: send 1 was
		// concurrent with "b".
		var b hb
		in := &history.Value{Value: "a", Producer: "p", IID: "1"}
		b.inv(0, history.XAddIdmp, s, in)
		b.add1(1, s, "b", "6-0")
		b.done(0, history.Info, nil)
		b.op(0, history.XAddIdmp, s, history.OK, in, &history.Value{Value: "a", Producer: "p", IID: "1", ID: "5-0"})
		wantValid(t, b.check(t, IDs, Options{}), Ok, "")
		// A fresh value (no earlier send) must still be above "b".
		w := b.op(2, history.XAddIdmp, s, history.OK, &history.Value{Value: "c", Producer: "q", IID: "1"},
			&history.Value{Value: "c", Producer: "q", IID: "1", ID: "5-5"})
		wantValid(t, b.check(t, IDs, Options{}), Illegal, "xadd-order", w)
	})
	t.Run("phantom", func(t *testing.T) {
		var b hb
		b.add1(0, s, "a", "1-0")
		r := b.read(2, s, es("1-0", "a", "2-0", "zz")...)
		wantValid(t, b.check(t, IDs, Options{}), Illegal, "phantom", r)
	})
}

func TestPrefix(t *testing.T) {
	good := func() *hb {
		var b hb
		b.add1(0, s, "a", "1-0")
		b.read(1, s, es("1-0", "a")...)
		b.add1(0, s, "b", "2-0")
		b.read(1, s, es("1-0", "a", "2-0", "b")...)
		b.op(2, history.XRead, s, history.OK, &history.Value{From: "1-0"}, &history.Value{Entries: es("2-0", "b")})
		return &b
	}
	t.Run("good", func(t *testing.T) {
		wantValid(t, good().check(t, Prefix, Options{}), Ok, "")
	})
	t.Run("read skips an entry", func(t *testing.T) {
		b := good()
		b.add1(0, s, "c", "3-0")
		r := b.read(1, s, es("1-0", "a", "3-0", "c")...)
		wantValid(t, b.check(t, Prefix, Options{}), Illegal, "non-prefix", r)
	})
	t.Run("read misses the head", func(t *testing.T) {
		b := good()
		r := b.read(1, s, es("2-0", "b")...)
		wantValid(t, b.check(t, Prefix, Options{}), Illegal, "non-prefix", r)
		wantValid(t, b.check(t, Prefix, Options{Trims: true}), Ok, "")
	})
	t.Run("partial read skips", func(t *testing.T) {
		b := good()
		b.add1(0, s, "c", "3-0")
		b.read(1, s, es("1-0", "a", "2-0", "b", "3-0", "c")...)
		r := b.op(2, history.XRead, s, history.OK, &history.Value{From: "1-0"}, &history.Value{Entries: es("3-0", "c")})
		wantValid(t, b.check(t, Prefix, Options{}), Illegal, "non-prefix", r)
	})
	t.Run("later read is shorter", func(t *testing.T) {
		var b hb
		b.add1(0, s, "a", "1-0")
		b.add1(0, s, "b", "2-0")
		r1 := b.read(1, s, es("1-0", "a", "2-0", "b")...)
		r2 := b.read(2, s, es("1-0", "a")...)
		wantValid(t, b.check(t, Prefix, Options{}), Illegal, "regression", r1, r2)
	})
	t.Run("concurrent reads may differ in length", func(t *testing.T) {
		var b hb
		b.add1(0, s, "a", "1-0")
		b.inv(1, history.XRange, s, &history.Value{Full: true})
		b.add1(0, s, "b", "2-0")
		b.read(2, s, es("1-0", "a", "2-0", "b")...)
		b.done(1, history.OK, &history.Value{Full: true, Entries: es("1-0", "a")})
		wantValid(t, b.check(t, Prefix, Options{}), Ok, "")
	})
	t.Run("trim moving backwards", func(t *testing.T) {
		var b hb
		b.add1(0, s, "a", "1-0")
		b.add1(0, s, "b", "2-0")
		b.read(1, s, es("1-0", "a", "2-0", "b")...)
		r1 := b.read(1, s, es("2-0", "b")...)
		r2 := b.read(1, s, es("1-0", "a", "2-0", "b")...)
		wantValid(t, b.check(t, Prefix, Options{Trims: true}), Illegal, "regression", r1, r2)
	})
}

func TestLiveness(t *testing.T) {
	var b hb
	b.nemesis(history.Start, "partition")
	b.add1(0, s, "a", "1-0")
	b.nemesis(history.Heal, "")
	b.add1(0, s, "b", "2-0")
	r := b.op(1, history.XRange, s, history.Info, &history.Value{Full: true}, nil)
	wantValid(t, b.check(t, Liveness, Options{}), Illegal, "no-progress", r)
	wantValid(t, b.check(t, Liveness, Options{Liveness: []history.F{history.XAdd}}), Ok, "")
	b.read(1, s, es("1-0", "a", "2-0", "b")...)
	wantValid(t, b.check(t, Liveness, Options{}), Ok, "")
	b.nemesis(history.Start, "kill n1")
	wantValid(t, b.check(t, Liveness, Options{}), Unknown, "")
}

// TestResends: a client that sends a write again after losing its reply
// (go-redis's ClusterClient) appends the value twice, under two IDs. Only
// Options.Resends accepts that, and an ID must still hold one value.
func TestResends(t *testing.T) {
	var b hb
	b.add1(0, s, "a", "1-0")
	w := b.add1(0, s, "b", "3-0") // the first send of "b" was appended as 2-0
	r := b.read(1, s, es("1-0", "a", "2-0", "b", "3-0", "b")...)
	wantValid(t, b.check(t, IDs, Options{}), Illegal, "id-mismatch", w, r)
	wantValid(t, b.check(t, Duplicates, Options{}), Illegal, "duplicate-value", r)
	o := Options{Resends: true}
	wantValid(t, b.check(t, IDs, o), Ok, "")
	wantValid(t, b.check(t, Duplicates, o), Ok, "")
	wantValid(t, b.check(t, Lost, o), Ok, "")
	wantValid(t, b.check(t, Linearizable, o), Unknown, "")
	r = b.read(1, s, es("1-0", "a", "2-0", "b", "3-0", "c")...)
	wantValid(t, b.check(t, IDs, o), Illegal, "id-mismatch", w, r)
}
