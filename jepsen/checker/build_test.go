package checker

import (
	"testing"

	"github.com/raftstream/raftstream/jepsen/history"
)

// hb builds histories by hand: each call appends one event at the next
// index, 10ns after the previous one.
type hb struct {
	h history.History
}

func (b *hb) add(e history.Event) int64 {
	e.Index = int64(len(b.h))
	e.Time = int64(len(b.h)+1) * 10
	b.h = append(b.h, e)
	return e.Index
}

// inv invokes f on key by process p.
func (b *hb) inv(p history.Process, f history.F, key string, v *history.Value) int64 {
	return b.add(history.Event{Process: p, Type: history.Invoke, F: f, Key: key, Value: v})
}

// done completes p's outstanding operation.
func (b *hb) done(p history.Process, t history.Type, v *history.Value) int64 {
	for i := len(b.h) - 1; i >= 0; i-- {
		if e := b.h[i]; e.Process == p && e.Type == history.Invoke {
			return b.add(history.Event{Process: p, Type: t, F: e.F, Key: e.Key, Value: v})
		}
	}
	panic("no outstanding op")
}

// op runs a whole operation without concurrency and returns its invoke index.
func (b *hb) op(p history.Process, f history.F, key string, t history.Type, in, out *history.Value) int64 {
	i := b.inv(p, f, key, in)
	b.done(p, t, out)
	return i
}

func (b *hb) add1(p history.Process, key, val, id string) int64 {
	return b.op(p, history.XAdd, key, history.OK, &history.Value{Value: val}, &history.Value{Value: val, ID: id})
}

func (b *hb) read(p history.Process, key string, es ...history.Entry) int64 {
	return b.op(p, history.XRange, key, history.OK, &history.Value{Full: true}, &history.Value{Full: true, Entries: es})
}

func (b *hb) nemesis(f history.F, fault string) {
	var v *history.Value
	if fault != "" {
		v = &history.Value{Fault: fault}
	}
	b.add(history.Event{Process: history.Nemesis, Type: history.Info, F: f, Value: v})
}

func es(pairs ...string) []history.Entry {
	var r []history.Entry
	for i := 0; i+1 < len(pairs); i += 2 {
		r = append(r, history.Entry{ID: pairs[i], Value: pairs[i+1]})
	}
	return r
}

// check validates the built history and runs one checker on it.
func (b *hb) check(t *testing.T, c func(*Input) Result, o Options) Result {
	t.Helper()
	if err := b.h.Validate(); err != nil {
		t.Fatalf("test history invalid: %v", err)
	}
	return c(NewInput(b.h, o))
}

// wantValid fails unless r has verdict v; when v is Illegal it also wants an
// anomaly of kind naming every op in ops.
func wantValid(t *testing.T, r Result, v Valid, kind string, ops ...int64) {
	t.Helper()
	if r.Valid != v {
		t.Fatalf("%s: verdict %s, want %s; anomalies %+v notes %v", r.Name, r.Valid, v, r.Anomalies, r.Notes)
	}
	if v != Illegal {
		return
	}
	for _, a := range r.Anomalies {
		if a.Kind != kind {
			continue
		}
		has := map[int64]bool{}
		for _, i := range a.Ops {
			has[i] = true
		}
		all := true
		for _, i := range ops {
			all = all && has[i]
		}
		if all {
			return
		}
	}
	t.Fatalf("%s: no %s anomaly naming ops %v; got %+v", r.Name, kind, ops, r.Anomalies)
}
