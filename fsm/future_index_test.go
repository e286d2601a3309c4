package fsm

import (
	"context"
	"testing"
)

// TestFutureReportsTheEntryIndex: a unit's future names the log entry that
// applied it (what WAIT asks followers to hold), later units later entries,
// and a unit that proposed nothing names none.
func TestFutureReportsTheEntryIndex(t *testing.T) {
	s := singleVoter(t, nil)
	submit := func(u Unit) *Future {
		t.Helper()
		f := s.Submit(u)
		if _, err := f.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
		return f
	}
	first := submit(unit(cmd("T.INCR")))
	if first.Index() == 0 || first.Index() > s.Raft().LastIndex() {
		t.Fatalf("first unit's index %d, last log index %d", first.Index(), s.Raft().LastIndex())
	}
	second := submit(unit(cmd("T.INCR"), cmd("T.INCR")))
	if second.Index() <= first.Index() {
		t.Fatalf("second unit's index %d not after the first's %d", second.Index(), first.Index())
	}
	if last := s.Raft().LastIndex(); second.Index() != last {
		t.Fatalf("second unit's index %d, last log index %d", second.Index(), last)
	}
	if f := submit(unit()); f.Index() != 0 {
		t.Fatalf("an empty unit reports index %d", f.Index())
	}
	if f := FailedFuture(ErrBusy); f.Index() != 0 {
		t.Fatalf("a failed future reports index %d", f.Index())
	}
	if f := newFuture(); f.Index() != 0 {
		t.Fatalf("a pending future reports index %d", f.Index())
	}
}
