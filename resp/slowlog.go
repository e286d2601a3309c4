package resp

import (
	"bytes"
	"math"
	"slices"
	"strconv"
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
//
// Under a write load whose replies wait longer than the threshold for
// replication, every command is logged: the log is a ring whose oldest
// entry, once it holds slowlog-max-len, is overwritten in place, its
// argument buffer reused, so that logging allocates nothing then.
type slowLog struct {
	slower atomic.Int64 // µs; < 0: off
	maxLen atomic.Int64

	mu      sync.Mutex
	entries []slowEntry // a ring: the oldest at head
	head    int
	nextID  int64
}

type slowEntry struct {
	id, at, usec int64 // at: unix seconds
	// args holds the logged arguments back to back; ends[i] is where the
	// i-th ends.
	args       []byte
	ends       []int
	addr, name string
}

func (l *slowLog) init() {
	l.slower.Store(defaultSlowerThan)
	l.maxLen.Store(defaultSlowlogLen)
}

// add logs a command that took d.
func (l *slowLog) add(c *client, argv [][]byte, d time.Duration) {
	var addr, name string
	if c != nil {
		addr, name = c.addr, c.getName()
	}
	at := time.Now().Unix()
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.slot(int(min(l.maxLen.Load(), math.MaxInt32)))
	e.id, e.at, e.usec, e.addr, e.name = l.nextID, at, d.Microseconds(), addr, name
	e.args, e.ends = appendSlowlogArgs(e.args[:0], e.ends[:0], argv)
	l.nextID++
}

// slot returns the entry to overwrite with the newest one, the log being
// kept to at most keep entries (a scratch entry when it keeps none). Under
// l.mu.
func (l *slowLog) slot(keep int) *slowEntry {
	if keep <= 0 {
		l.entries, l.head = nil, 0
		return &slowEntry{}
	}
	if len(l.entries) > keep || len(l.entries) < keep && l.head != 0 {
		// slowlog-max-len changed since the ring filled up: straighten
		// it, oldest first, keeping the newest keep.
		l.entries = slices.Concat(l.entries[l.head:], l.entries[:l.head])
		l.entries = l.entries[max(len(l.entries)-keep, 0):]
		l.head = 0
	}
	if len(l.entries) == keep {
		e := &l.entries[l.head]
		l.head = (l.head + 1) % keep
		return e
	}
	l.entries = append(l.entries, slowEntry{})
	return &l.entries[len(l.entries)-1]
}

// appendSlowlogArgs appends to args (and their ends to ends) what the log
// keeps of argv: at most 32 arguments (the last saying how many more there
// were), each at most 128 bytes (saying how many more there were), with
// secrets redacted.
func appendSlowlogArgs(args []byte, ends []int, argv [][]byte) ([]byte, []int) {
	n := min(len(argv), slowlogMaxArgs)
	for i := range n {
		a := argv[i]
		switch {
		case i == n-1 && n < len(argv):
			args = append(args, "... ("...)
			args = strconv.AppendInt(args, int64(len(argv)-n+1), 10)
			args = append(args, " more arguments)"...)
		case redacted(argv, i):
			args = append(args, "(redacted)"...)
		case len(a) > slowlogMaxBytes:
			args = append(args, a[:slowlogMaxBytes]...)
			args = append(args, "... ("...)
			args = strconv.AppendInt(args, int64(len(a)-slowlogMaxBytes), 10)
			args = append(args, " more bytes)"...)
		default:
			args = append(args, a...)
		}
		ends = append(ends, len(args))
	}
	return args, ends
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

// slowlogRow is one entry of SLOWLOG GET.
type slowlogRow struct {
	id, at, usec int64
	argv         []string
	addr, name   string
}

// get returns the newest n entries (all for n < 0), newest first.
func (l *slowLog) get(n int64) []slowlogRow {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n < 0 || n > int64(len(l.entries)) {
		n = int64(len(l.entries))
	}
	out := make([]slowlogRow, 0, n)
	for k := len(l.entries) - 1; k >= 0 && int64(len(out)) < n; k-- {
		e := &l.entries[(l.head+k)%len(l.entries)]
		argv := make([]string, len(e.ends))
		from := 0
		for i, end := range e.ends {
			argv[i] = string(e.args[from:end])
			from = end
		}
		out = append(out, slowlogRow{id: e.id, at: e.at, usec: e.usec, argv: argv, addr: e.addr, name: e.name})
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
	l.entries, l.head = nil, 0
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
