package resp

import (
	"bytes"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/raftstream/raftstream/engine"
)

// SLOWLOG: the commands that took at least slowlog-log-slower-than
// microseconds (observe.go says what a command's time is), newest first, at
// most slowlog-max-len of them, per node. As in Redis: a negative threshold
// turns logging off and 0 logs every command; lowering slowlog-max-len
// trims the log at its next entry; arguments past the 32nd and bytes past
// the 128th of an argument are summarised; passwords are redacted.

const (
	slowlogMaxArgs  = 32  // Redis's SLOWLOG_ENTRY_MAX_ARGC
	slowlogMaxBytes = 128 // Redis's SLOWLOG_ENTRY_MAX_STRING
	// Redis's defaults.
	defaultSlowerThan = 10000
	defaultSlowlogLen = 128
)

// slowLog is one node's slow log. The thresholds are read on every command
// (atomics); the entries are guarded by mu.
type slowLog struct {
	slower atomic.Int64 // µs; < 0: off
	maxLen atomic.Int64

	mu      sync.Mutex
	entries []slowEntry // oldest first
	nextID  int64
}

type slowEntry struct {
	id, at, usec int64 // at: unix seconds
	argv         []string
	addr, name   string
}

func (l *slowLog) init() {
	l.slower.Store(defaultSlowerThan)
	l.maxLen.Store(defaultSlowlogLen)
}

// add logs a command that took d.
func (l *slowLog) add(c *client, argv [][]byte, d time.Duration) {
	e := slowEntry{at: time.Now().Unix(), usec: d.Microseconds(), argv: slowlogArgs(argv)}
	if c != nil {
		e.addr, e.name = c.addr, c.getName()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	e.id = l.nextID
	l.nextID++
	l.entries = append(l.entries, e)
	if over := len(l.entries) - int(l.maxLen.Load()); over > 0 {
		l.entries = slices.Delete(l.entries, 0, over)
	}
}

// slowlogArgs is what the log keeps of argv: at most 32 arguments (the last
// saying how many more there were), each at most 128 bytes (saying how many
// more there were), with secrets redacted.
func slowlogArgs(argv [][]byte) []string {
	n := min(len(argv), slowlogMaxArgs)
	out := make([]string, n)
	for i := range n {
		a := argv[i]
		switch {
		case i == n-1 && n < len(argv):
			out[i] = fmt.Sprintf("... (%d more arguments)", len(argv)-n+1)
		case redacted(argv, i):
			out[i] = "(redacted)"
		case len(a) > slowlogMaxBytes:
			out[i] = fmt.Sprintf("%s... (%d more bytes)", a[:slowlogMaxBytes], len(a)-slowlogMaxBytes)
		default:
			out[i] = string(a)
		}
	}
	return out
}

// redacted reports whether argv[i] is a secret the logs must not show:
// AUTH's arguments, HELLO's AUTH user and password, CONFIG SET
// requirepass's value, ACL SETUSER's password rules.
func redacted(argv [][]byte, i int) bool {
	switch {
	case i == 0:
		return false
	case engine.EqFold(argv[0], "auth"):
		return true
	case engine.EqFold(argv[0], "hello"):
		for j := 2; j < len(argv) && j < i; j++ {
			if engine.EqFold(argv[j], "auth") && i <= j+2 {
				return true
			}
		}
	case engine.EqFold(argv[0], "config") && i >= 3 && i%2 == 1 && len(argv) > 1 && engine.EqFold(argv[1], "set"):
		return engine.EqFold(argv[i-1], "requirepass")
	case engine.EqFold(argv[0], "acl") && i >= 3 && len(argv) > 1 && engine.EqFold(argv[1], "setuser"):
		a := argv[i]
		return len(a) > 0 && bytes.IndexByte([]byte("><#!"), a[0]) >= 0
	}
	return false
}

// get returns the newest n entries (all for n < 0), newest first.
func (l *slowLog) get(n int64) []slowEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n < 0 || n > int64(len(l.entries)) {
		n = int64(len(l.entries))
	}
	out := make([]slowEntry, 0, n)
	for i := len(l.entries) - 1; i >= 0 && int64(len(out)) < n; i-- {
		out = append(out, l.entries[i])
	}
	return out
}

func (l *slowLog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.entries)
}

func (l *slowLog) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries = nil
}

// cmdSlowlogGet implements SLOWLOG GET [count] (default 10, -1 for all).
func cmdSlowlogGet(s *Server, c *client, argv [][]byte) reply {
	n := int64(10)
	switch len(argv) {
	case 2:
	case 3:
		v, ok := engine.ParseInt(argv[2])
		if !ok || v < -1 {
			return errorf("ERR count should be greater than or equal to -1")
		}
		n = v
	default:
		return errorf("ERR unknown subcommand or wrong number of arguments for '%.128s'. Try SLOWLOG HELP.", argv[1])
	}
	entries := s.slow.get(n)
	out := make(engine.Array, 0, len(entries))
	for _, e := range entries {
		args := make(engine.Array, len(e.argv))
		for i, a := range e.argv {
			args[i] = engine.Bulk(a)
		}
		out = append(out, engine.Array{engine.Integer(e.id), engine.Integer(e.at), engine.Integer(e.usec),
			args, engine.Bulk(e.addr), engine.Bulk(e.name)})
	}
	return out
}

func cmdSlowlogLen(s *Server, c *client, argv [][]byte) reply { return engine.Integer(s.slow.len()) }

func cmdSlowlogReset(s *Server, c *client, argv [][]byte) reply {
	s.slow.reset()
	return engine.OK
}
