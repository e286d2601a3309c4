package acl

import (
	"sync"
	"time"
)

// LogMax is how many ACL LOG entries a Log keeps (Redis's
// acllog-max-len).
const LogMax = 128

// logMerge is how long after its last repeat a denial is still counted in
// its entry rather than starting a new one.
const logMerge = 60 * time.Second

// Log is ACL LOG: denied commands and keys and failed AUTHs, newest first.
// A repeat of an entry's denial (same reason, context, object and user)
// within 60 s of its last one bumps its count and moves it to the front.
// It is safe for concurrent use. The zero Log is empty and ready.
type Log struct {
	mu      sync.Mutex
	entries []*LogEntry // newest first; Invariant: len ≤ LogMax
}

// LogEntry is one ACL LOG entry.
type LogEntry struct {
	Reason     string // ReasonCommand, ReasonKey or ReasonAuth
	Context    string // "toplevel", or "multi" inside MULTI
	Object     string // the command, the key, or "AUTH"
	Username   string // the user refused (for AUTH, the name given)
	ClientInfo string // the client's CLIENT LIST line at the latest denial
	// Count, Created and Updated are kept by Log.Add.
	Count            int64
	Created, Updated time.Time
}

// Add records a denial e (Reason, Context, Object, Username and
// ClientInfo) at time now.
func (l *Log) Add(e LogEntry, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, old := range l.entries {
		if old.Reason == e.Reason && old.Context == e.Context && old.Object == e.Object &&
			old.Username == e.Username && now.Sub(old.Updated) < logMerge {
			old.Count++
			old.Updated, old.ClientInfo = now, e.ClientInfo
			copy(l.entries[1:i+1], l.entries[:i])
			l.entries[0] = old
			return
		}
	}
	e.Count, e.Created, e.Updated = 1, now, now
	l.entries = append([]*LogEntry{&e}, l.entries...)
	if len(l.entries) > LogMax {
		l.entries = l.entries[:LogMax]
	}
}

// Entries returns copies of the newest n entries, newest first.
func (l *Log) Entries(n int) []LogEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	n = max(0, min(n, len(l.entries)))
	out := make([]LogEntry, n)
	for i := range out {
		out[i] = *l.entries[i]
	}
	return out
}

// Reset empties the log (ACL LOG RESET).
func (l *Log) Reset() {
	l.mu.Lock()
	l.entries = nil
	l.mu.Unlock()
}
