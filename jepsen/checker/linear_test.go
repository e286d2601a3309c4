package checker

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/raftstream/raftstream/jepsen/history"
)

func TestLinearizable(t *testing.T) {
	t.Run("good with concurrency and unknown appends", func(t *testing.T) {
		var b hb
		b.add1(0, s, "a", "1-0")
		b.inv(1, history.XAdd, s, &history.Value{Value: "b"})
		b.inv(2, history.XRange, s, &history.Value{Full: true})
		b.done(2, history.OK, &history.Value{Full: true, Entries: es("1-0", "a", "2-0", "b")})
		b.done(1, history.Info, nil)                                            // timed out, but a read saw it
		b.op(3, history.XAdd, s, history.Info, &history.Value{Value: "c"}, nil) // never seen
		b.add1(0, s, "d", "4-0")
		b.read(2, s, es("1-0", "a", "2-0", "b", "4-0", "d")...)
		r := b.check(t, Linearizable, Options{})
		wantValid(t, r, Ok, "")
	})
	t.Run("stale read", func(t *testing.T) {
		var b hb
		b.add1(0, s, "a", "1-0")
		b.add1(0, s, "b", "2-0")
		b.read(1, s, es("1-0", "a", "2-0", "b")...)
		r2 := b.read(2, s, es("1-0", "a")...) // a follower's stale view
		r := b.check(t, Linearizable, Options{})
		wantValid(t, r, Illegal, "non-linearizable", r2)
		html := string(r.Files["linear-s0.html"])
		if !strings.Contains(html, "<html") || !strings.Contains(html, "append(b)") {
			t.Fatalf("no porcupine visualization in result files: %d bytes", len(html))
		}
	})
	t.Run("read of a write that had not begun", func(t *testing.T) {
		var b hb
		r1 := b.read(1, s, es("1-0", "a")...)
		b.add1(0, s, "a", "1-0")
		wantValid(t, b.check(t, Linearizable, Options{}), Illegal, "non-linearizable", r1)
	})
	t.Run("unknown append seen then unseen", func(t *testing.T) {
		var b hb
		b.inv(0, history.XAdd, s, &history.Value{Value: "a"})
		b.read(1, s, es("1-0", "a")...)
		b.read(1, s)
		b.done(0, history.Info, nil)
		wantValid(t, b.check(t, Linearizable, Options{}), Illegal, "non-linearizable")
	})
	t.Run("keys are independent", func(t *testing.T) {
		var b hb
		b.add1(0, "k1", "a", "1-0")
		b.read(1, "k2")
		b.read(1, "k1", es("1-0", "a")...)
		wantValid(t, b.check(t, Linearizable, Options{}), Ok, "")
	})
	t.Run("trims are not modeled", func(t *testing.T) {
		var b hb
		b.add1(0, s, "a", "1-0")
		wantValid(t, b.check(t, Linearizable, Options{Trims: true}), Unknown, "")
	})
}

// TestLinearizablePorcupineCrossCheck: on a small stream porcupine's search
// runs even where chain found a linearization, and its Illegal verdict wins:
// with chain replaced by one that accepts everything, a stale read is still
// flagged.
func TestLinearizablePorcupineCrossCheck(t *testing.T) {
	defer func(d func([]*history.Op) ([]*history.Op, string, bool)) { decide = d }(decide)
	decide = func([]*history.Op) ([]*history.Op, string, bool) { return nil, "", true }
	var b hb
	b.add1(0, s, "a", "1-0")
	b.add1(0, s, "b", "2-0")
	b.read(1, s, es("1-0", "a", "2-0", "b")...)
	r2 := b.read(2, s, es("1-0", "a")...)
	r := b.check(t, Linearizable, Options{})
	wantValid(t, r, Illegal, "non-linearizable", r2)
	if !strings.Contains(strings.Join(r.Notes, " "), "porcupine found no linearization where chain found one") {
		t.Errorf("the disagreement is not noted: %v", r.Notes)
	}
}

// Unobserved unknown-outcome appends must not blow up the search: each of
// them could be linearized before any read, and there are 2^40 subsets.
func TestLinearizableManyUnobservedUnknownAppends(t *testing.T) {
	var b hb
	var want []history.Entry
	for i := 0; i < 40; i++ {
		b.op(history.Process(i%3), history.XAdd, s, history.Info, &history.Value{Value: fmt.Sprintf("lost-%d", i)}, nil)
		v := fmt.Sprintf("v%d", i)
		id := fmt.Sprintf("%d-0", i+1)
		b.add1(3, s, v, id)
		want = append(want, history.Entry{ID: id, Value: v})
		b.read(4, s, want...)
	}
	r := b.check(t, Linearizable, Options{LinearTimeout: 3 * time.Second})
	wantValid(t, r, Ok, "")
}

// Retried idempotent sends of one message are one operation spanning from
// the first send to the first acknowledged one: many unknown-outcome retries
// must neither exhaust the search nor hide a read that saw the message
// before its first send began.
func TestLinearizableIdmpRetries(t *testing.T) {
	t.Run("retries of one message are one append", func(t *testing.T) {
		var b hb
		var want []history.Entry
		for i := 0; i < 40; i++ {
			v := fmt.Sprintf("m%d", i)
			id := fmt.Sprintf("%d-0", i+1)
			for r := 0; r < 4; r++ { // unknown outcomes, each retried
				b.op(history.Process(r), history.XAddIdmp, s, history.Info, &history.Value{Value: v}, nil)
			}
			b.op(5, history.XAddIdmp, s, history.OK, &history.Value{Value: v}, &history.Value{Value: v, ID: id})
			want = append(want, history.Entry{ID: id, Value: v})
			b.read(6, s, want...)
		}
		wantValid(t, b.check(t, Linearizable, Options{LinearTimeout: 5 * time.Second}), Ok, "")
	})
	t.Run("read before the first send is still flagged", func(t *testing.T) {
		var b hb
		r1 := b.read(1, s, es("1-0", "m")...)
		b.op(0, history.XAddIdmp, s, history.Info, &history.Value{Value: "m"}, nil)
		b.op(0, history.XAddIdmp, s, history.OK, &history.Value{Value: "m"}, &history.Value{Value: "m", ID: "1-0"})
		wantValid(t, b.check(t, Linearizable, Options{}), Illegal, "non-linearizable", r1)
	})
}

// An unknown-outcome append is bounded by the first read that shows it; a
// read that showed it before it began must still be flagged.
func TestLinearizableUnknownAppendBoundedByReads(t *testing.T) {
	t.Run("observed unknown appends stay cheap", func(t *testing.T) {
		var b hb
		var want []history.Entry
		for i := 0; i < 60; i++ {
			v := fmt.Sprintf("u%d", i)
			b.inv(history.Process(i%4), history.XAdd, s, &history.Value{Value: v})
			want = append(want, history.Entry{ID: fmt.Sprintf("%d-0", i+1), Value: v})
			b.read(9, s, want...)
			b.done(history.Process(i%4), history.Info, nil)
		}
		wantValid(t, b.check(t, Linearizable, Options{LinearTimeout: 5 * time.Second}), Ok, "")
	})
	t.Run("seen before invoked", func(t *testing.T) {
		var b hb
		r1 := b.read(1, s, es("1-0", "a")...)
		b.op(0, history.XAdd, s, history.Info, &history.Value{Value: "a"}, nil)
		wantValid(t, b.check(t, Linearizable, Options{}), Illegal, "non-linearizable", r1)
	})
}
