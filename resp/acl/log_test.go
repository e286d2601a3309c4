package acl

import (
	"fmt"
	"testing"
	"time"
)

func TestLog(t *testing.T) {
	var l Log
	t0 := time.Unix(1000, 0)
	denied := LogEntry{Reason: ReasonCommand, Context: "toplevel", Object: "xadd", Username: "u", ClientInfo: "id=1"}
	l.Add(denied, t0)
	l.Add(LogEntry{Reason: ReasonKey, Context: "toplevel", Object: "k", Username: "u"}, t0.Add(time.Second))
	// A repeat within 60 s of the last counts in its entry and moves it
	// to the front, with the latest client.
	again := denied
	again.ClientInfo = "id=2"
	l.Add(again, t0.Add(59*time.Second))
	got := l.Entries(10)
	if len(got) != 2 || got[0].Object != "xadd" || got[0].Count != 2 || got[0].ClientInfo != "id=2" ||
		!got[0].Created.Equal(t0) || !got[0].Updated.Equal(t0.Add(59*time.Second)) || got[1].Object != "k" {
		t.Fatalf("after a repeat: %+v", got)
	}
	// Another context is another denial; 60 s after the last repeat, a new
	// entry.
	inMulti := denied
	inMulti.Context = "multi"
	l.Add(inMulti, t0.Add(60*time.Second))
	l.Add(denied, t0.Add(119*time.Second))
	if got := l.Entries(10); len(got) != 4 || got[0].Count != 1 || got[0].Context != "toplevel" || got[1].Context != "multi" {
		t.Fatalf("after 60 s: %+v", got)
	}
	if got := l.Entries(1); len(got) != 1 || got[0].Count != 1 {
		t.Errorf("Entries(1): %+v", got)
	}
	if got := l.Entries(-1); len(got) != 0 {
		t.Errorf("Entries(-1): %+v", got)
	}
	for i := range LogMax + 5 {
		l.Add(LogEntry{Reason: ReasonKey, Object: fmt.Sprint(i)}, t0)
	}
	if got := l.Entries(1000); len(got) != LogMax || got[0].Object != fmt.Sprint(LogMax+4) {
		t.Errorf("over LogMax: %d entries, newest %q", len(got), got[0].Object)
	}
	l.Reset()
	if got := l.Entries(10); len(got) != 0 {
		t.Errorf("after Reset: %+v", got)
	}
}
